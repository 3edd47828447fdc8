"""The documentation site: it builds with ``--strict``, and its API reference
renders as a reader needs it (examples as code, no Sphinx roles, one entry per
public name and none for internals). The ``tapegrad.torch`` reference page is
generated from the facade itself (``docs/gen_torch_ref.py``) and must be
current.

The site is built once per session (``site`` fixture); the tests that only
read the sources need neither mkdocs nor a build.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tapegrad

ROOT = Path(__file__).resolve().parents[1]

# Sphinx cross-reference roles: mkdocstrings shows them as literal text (in the
# built page the backticks have become <code>, so the page check drops them)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|attr|mod|data|exc|obj|const):`")
SPHINX_ROLE_SHOWN = re.compile(r":(?:py:)?(?:func|meth|class|attr|mod|data|exc|obj|const):")
# engine internals that must not get an entry of their own on the API page
INTERNALS = ("Primitive", "jvp_maker", "record", "top_tape", "binary_method", "backprop")


# --- the sources ------------------------------------------------------------------------------------


def _docstrings() -> list[tuple[str, int, str]]:
    """(file, line, docstring) of every module, class and function in the package."""
    out = []
    for path in sorted((ROOT / "tapegrad").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    out.append((str(path.relative_to(ROOT)), getattr(node, "lineno", 1), doc))
    return out


def test_docstrings_use_no_sphinx_roles() -> None:
    """Docstrings are Markdown for mkdocstrings: ``name``, not :func:`name`."""
    bad = [f"{f}:{line}: {SPHINX_ROLE.search(doc).group(0)}"  # type: ignore[union-attr]
           for f, line, doc in _docstrings() if SPHINX_ROLE.search(doc)]
    assert not bad, "Sphinx roles in docstrings:\n" + "\n".join(bad)


def test_docstring_examples_are_examples_sections() -> None:
    """Doctest lines sit in an ``Examples:`` section (the Google-style title
    mkdocstrings renders as code; ``Example:`` renders as a quote)."""
    bad = []
    for f, line, doc in _docstrings():
        lines = doc.splitlines()
        section = None
        for text in lines:
            if re.fullmatch(r"\S[\w ]*:\s*", text):  # a section title at the docstring's margin
                section = text.strip()[:-1]
            elif text and not text[0].isspace():
                section = None
            if text.strip().startswith(">>>") and section != "Examples":
                bad.append(f"{f}:{line} ({section or 'no section'}): {text.strip()}")
                break
    assert not bad, "doctest lines outside an 'Examples:' section:\n" + "\n".join(bad)


# --- the built site ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict`` (skip without mkdocs)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["NO_MKDOCS_2_WARNING"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


class _Page(HTMLParser):
    """What the tests read off a built page: the ids, the ids of documented
    objects' headings, blockquotes inside docstrings, ``>>>`` outside ``<pre>``."""

    VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
                      "track", "wbr"})

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.object_ids: list[str] = []
        self.quotes_in_docs = 0
        self.loose_prompts: list[str] = []
        self.text: list[str] = []
        self._stack: list[tuple[str, str]] = []  # (tag, class)
        self.feed(text)

    def _inside(self, tag: str, cls: str = "") -> bool:
        return any(t == tag and cls in c.split() for t, c in self._stack) if cls else \
            any(t == tag for t, _ in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.append(a["id"])
            if "doc-heading" in a.get("class", "").split():
                self.object_ids.append(a["id"])
        if tag == "blockquote" and self._inside("div", "doc-contents"):
            self.quotes_in_docs += 1
        if tag not in self.VOID:
            self._stack.append((tag, a.get("class", "")))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data: str) -> None:
        if not self._inside("script") and not self._inside("style"):
            self.text.append(data)
        if ">>>" in data and not self._inside("pre"):
            self.loose_prompts.append(data.strip()[:80])


@pytest.fixture(scope="module")
def api_page(site: Path) -> _Page:
    return _Page((site / "api.html").read_text(encoding="utf-8"))


def _resolve(path: str) -> Any:
    """The object a dotted id names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def test_mkdocs_build_strict(site: Path) -> None:
    for page in ("index.html", "api.html", "torch.html"):
        assert (site / page).exists(), page


def test_the_built_site_browses_from_disk(site: Path) -> None:
    """Opened as files (``file://.../index.html``, no server), every link between the
    site's pages names a file: with directory URLs a link to ``api/`` shows a folder."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 5
    checked = 0
    for page in pages:
        for href in re.findall(r'href="([^"]+)"', page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", href) or href.startswith(("#", "/")):
                continue  # another site, this page, or (mkdocs writes none) a root-relative path
            target = (page.parent / href.split("#")[0].split("?")[0]).resolve()
            assert target.is_file(), f"{page.relative_to(site)} links to {href}, which is no file"
            checked += 1
    assert checked > 50, checked


def test_docs_index_lists_every_example() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    examples = sorted(p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    assert len(examples) > 10
    missing = [name for name in examples if f"`{name}`" not in index]
    assert not missing, f"docs/index.md does not list {missing}"


def test_api_examples_render_as_code(api_page: _Page) -> None:
    assert api_page.quotes_in_docs == 0, "a docstring renders a <blockquote> (an 'Example:' or '>>>' outside " \
                                         "an 'Examples:' section)"
    assert not api_page.loose_prompts, f"'>>>' outside a code block: {api_page.loose_prompts}"


def test_api_page_shows_no_sphinx_roles(api_page: _Page) -> None:
    text = "".join(api_page.text)
    assert not SPHINX_ROLE_SHOWN.search(text), SPHINX_ROLE_SHOWN.findall(text)


def test_every_public_name_has_an_entry(api_page: _Page) -> None:
    missing = [n for n in tapegrad.__all__ if f"tapegrad.{n}" not in api_page.ids]
    assert not missing, f"no entry (id 'tapegrad.NAME') on the API page for {missing}"


def test_internals_have_no_entry_and_nothing_shows_twice(api_page: _Page) -> None:
    ids = api_page.object_ids
    assert ids, "no documented objects found on the API page"
    internal = [i for i in ids if i.rsplit(".", 1)[-1] in INTERNALS or i.rsplit(".", 1)[-1].startswith("_")]
    assert not internal, f"internals documented on the API page: {internal}"
    seen: dict[int, str] = {}
    twice = []
    for i in ids:
        try:
            obj = _resolve(i)
        except (ImportError, AttributeError) as e:
            raise AssertionError(f"the API page's entry {i!r} names no object of the package: {e}") from e
        if isinstance(obj, ModuleType):
            continue
        if id(obj) in seen:
            twice.append(f"{seen[id(obj)]} and {i}")
        seen.setdefault(id(obj), i)
    assert not twice, f"documented twice: {twice}"


# --- the tapegrad.torch reference -------------------------------------------------------------------


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_torch_ref", ROOT / "docs" / "gen_torch_ref.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclass looks its module up there)
    spec.loader.exec_module(mod)
    return mod


def test_torch_reference_is_current() -> None:
    """docs/torch.md's generated part is what ``python docs/gen_torch_ref.py`` writes now."""
    gen = _generator()
    page = (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    assert page == gen.update(page), "docs/torch.md is stale: run `python docs/gen_torch_ref.py`"


def test_torch_reference_lists_what_resolves() -> None:
    """Every name the page lists resolves on the facade, and a sample of
    names the facade has (table rows, modules, methods) is listed."""
    import tapegrad.torch as torch
    from tapegrad.torch import _ops

    gen = _generator()
    listed = gen.listed_names()
    assert listed, "the generator lists nothing"
    for qual in listed:
        obj: Any = torch
        for part in qual.split("."):
            obj = getattr(obj, part)  # AttributeError names what the page lists but the facade lacks
    for row in _ops.TABLE:
        assert f"Tensor.{row.name}" in listed
        for name in row.functions:
            assert name in listed
    for name in ("nn.Linear", "nn.functional.cross_entropy", "optim.Adam", "utils.data.DataLoader",
                 "autograd.grad", "func.vmap", "linalg.inv", "nn.Module.parameters", "Tensor.backward"):
        assert name in listed, name


def test_torch_page_in_nav() -> None:
    assert "torch.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_torch_page_samples_print_what_they_show() -> None:
    """The ``pycon`` samples of docs/torch.md run as doctests (``...`` stands for an address)."""
    import doctest

    result = doctest.testfile(str(ROOT / "docs" / "torch.md"), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, "no samples found in docs/torch.md"
    assert result.failed == 0, f"{result.failed} sample(s) in docs/torch.md print something else"


def test_torch_page_runner_runs_a_program_unchanged(tmp_path: Path) -> None:
    """The page's ``run_on_tapegrad.py`` runs a file that imports ``torch``,
    ``torch.nn``, ``torch.nn.functional`` and ``torch.utils.data`` on the facade."""
    page = (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    runner = next((b for b in blocks if "run_on_tapegrad" in b), None)
    assert runner is not None, "docs/torch.md has no run_on_tapegrad.py block"
    (tmp_path / "run_on_tapegrad.py").write_text(runner, encoding="utf-8")
    (tmp_path / "program.py").write_text(
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "model = nn.Linear(3, 1)\n"
        "X, y = torch.ones(4, 3), torch.zeros(4, 1)\n"
        "for xb, yb in DataLoader(TensorDataset(X, y), batch_size=2):\n"
        "    F.mse_loss(model(xb), yb).backward()\n"
        "print(torch.__name__, type(model.weight.grad).__name__, tuple(model.weight.grad.shape))\n",
        encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "run_on_tapegrad.py", "program.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["tapegrad.torch", "Tensor", "(1,", "3)"], proc.stdout


# the deliberate differences a program ported from JAX, autograd or PyTorch meets, each
# listed where those users look, with the change that ports the code
DIFFERENCES = {
    "coming-from.md": ["float64 by default", "type promotion", "Out-of-bounds indices", "Random numbers",
                       "Floating-point warnings", "zero spread", "size-1 output", "`where(True, 1, 2)`",
                       "odd last axis", "symmetrised", "singular matrix", "`hvp` returns a pair",
                       "`make_vjp`", "Building an array from traced values", "`check_grads`"],
    "torch.md": ["Complex gradients follow JAX's convention", "NumPy scalar is a strong type",
                 "Random numbers come from NumPy generators", "Floating-point exceptions"],
}


def test_deliberate_differences_are_listed_with_their_port() -> None:
    for page, items in DIFFERENCES.items():
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        for item in items:
            assert item in text, f"docs/{page} does not list {item!r}"
    section = (ROOT / "docs" / "coming-from.md").read_text(encoding="utf-8").split(
        "## Differences kept on purpose", 1)[1]
    bullets = [b for b in re.split(r"\n- ", section)[1:]]
    assert len(bullets) >= 15
    for b in bullets:
        assert "Port:" in b or "ports as" in b or "Nothing to port" in b, f"no port given: {b[:80]!r}"
