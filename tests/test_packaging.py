"""What a user installs: the wheel and sdist carry the licence, ``py.typed`` and the
metadata a package index shows; the README's links work there; type checkers see
``tapegrad.numpy``'s names."""

from __future__ import annotations

import email.parser
import email.policy
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import types
import zipfile
from email.message import Message
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPO_URL = "https://github.com/tapegrad/tapegrad"
URL_NAMES = {"Homepage", "Documentation", "Source", "Issues"}

# Build the distributions with setuptools' PEP 517 hooks in a copy of the tree (no network,
# no build/ or *.egg-info left in the checkout); print the two file names after setuptools' log.
BUILD = """\
import sys
from setuptools import build_meta
out = sys.argv[1]  # (read once: the hooks rewrite sys.argv)
names = build_meta.build_wheel(out), build_meta.build_sdist(out), build_meta.build_editable(out)
print("built:", *names)
"""


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(wheel, sdist, editable wheel) built from a copy of the package's files."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed")
    import setuptools

    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} predates SPDX licences (needs >= 77)")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "tapegrad", src / "tapegrad", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = src / "dist"
    proc = subprocess.run([sys.executable, "-c", BUILD, str(out)], cwd=src, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel, sdist, editable = proc.stdout.rsplit("built:", 1)[1].split()
    return out / wheel, out / sdist, out / editable


def parse_metadata(text: str) -> Message:
    return email.parser.Parser(policy=email.policy.compat32).parsestr(text)


def wheel_metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return parse_metadata(z.read(name).decode())


def test_license_file_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 The tapegrad developers" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_wheel_ships_license_and_py_typed(dists: tuple[Path, Path, Path]) -> None:
    with zipfile.ZipFile(dists[0]) as z:
        names = z.namelist()
        licences = [n for n in names if re.fullmatch(r"tapegrad-[^/]+\.dist-info/licenses/LICENSE", n)]
        assert licences, f"no LICENSE in the wheel's dist-info: {names}"
        assert z.read(licences[0]) == (ROOT / "LICENSE").read_bytes()
        assert "tapegrad/py.typed" in names
        assert not [n for n in names if n.startswith(("tests/", "examples/", "benchmarks/"))]


def test_sdist_ships_license(dists: tuple[Path, Path, Path]) -> None:
    with tarfile.open(dists[1]) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        assert f"{top}/LICENSE" in names and f"{top}/tapegrad/py.typed" in names
        pkg_info = tar.extractfile(f"{top}/PKG-INFO")
        assert pkg_info is not None
        assert parse_metadata(pkg_info.read().decode())["License-Expression"] == "MIT"


def test_wheel_metadata(dists: tuple[Path, Path, Path]) -> None:
    meta = wheel_metadata(dists[0])
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier") or []
    # an SPDX expression replaces the licence classifiers (setuptools refuses both)
    assert not [c for c in classifiers if c.startswith("License ::")]
    for wanted in ("Operating System :: OS Independent", "Typing :: Typed",
                   "Topic :: Scientific/Engineering :: Mathematics", "Programming Language :: Python :: 3 :: Only"):
        assert wanted in classifiers
    # the Python versions named agree with Requires-Python
    requires = re.fullmatch(r">=(\d+)\.(\d+)", meta["Requires-Python"])
    assert requires, meta["Requires-Python"]
    low = (int(requires.group(1)), int(requires.group(2)))
    versions = [tuple(int(p) for p in c.rsplit(" ", 1)[1].split("."))
                for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert versions and min(versions) == low
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) == URL_NAMES
    assert all(u.startswith(REPO_URL) for u in urls.values()), urls
    assert len((meta["Keywords"] or "").split(",")) >= 5
    # the page the index shows is the README
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().strip() == (ROOT / "README.md").read_text().strip()


def test_editable_install_is_a_plain_path_that_mypy_follows(dists: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """``pip install -e .`` (the README's install) must leave a ``.pth`` that names the
    checkout, not an import hook: static tools (mypy, pyright) read a ``.pth``'s paths but
    run no code, and would not find tapegrad. Installs the editable wheel into a bare
    virtual environment (as pip would: its files into site-packages) and runs mypy there."""
    editable = dists[2]
    src = editable.parent.parent
    with zipfile.ZipFile(editable) as z:
        names = z.namelist()
        pths = [n for n in names if n.endswith(".pth")]
        assert len(pths) == 1, names
        lines = z.read(pths[0]).decode().split()
        assert lines == [str(src)], f"{pths[0]} is {lines}, not the checkout's path"
        assert not [n for n in names if n.endswith(".py")], f"an import hook in the editable wheel: {names}"
        pytest.importorskip("mypy")
        import numpy

        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        python = bindir / ("python.exe" if os.name == "nt" else "python")
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True, timeout=120).stdout.strip()
        z.extractall(site)
    # numpy (tapegrad's dependency) from this environment, as pip would have installed it
    (Path(site) / "numpy-here.pth").write_text(str(Path(numpy.__file__).parents[1]) + "\n")
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import tapegrad\nimport tapegrad.numpy as tnp\n\n"
                       "reveal_type(tapegrad.grad)\nreveal_type(tnp.ones)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    proc = subprocess.run([sys.executable, "-m", "mypy", "--python-executable", str(python),
                           "--follow-imports=silent", "--no-error-summary", "--no-incremental",
                           str(snippet)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    out = proc.stdout + proc.stderr
    assert "Cannot find implementation or library stub" not in out and "import-not-found" not in out, out
    assert "Revealed type is \"def" in out, out
    assert "error" not in out, out


def test_readme_links_are_absolute_and_point_at_files_that_exist() -> None:
    """A package index shows the README without the repository around it: relative
    links would break, so every link is absolute, and the ones into this repository
    name a file or folder that exists."""
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links, "the README links to nothing"
    for link in links:
        assert link.startswith("https://"), f"README link {link!r} is not absolute"
        m = re.fullmatch(re.escape(REPO_URL) + r"/(?:blob|tree)/main/([^#]+)(?:#.*)?", link)
        if link.startswith(REPO_URL + "/blob") or link.startswith(REPO_URL + "/tree"):
            assert m, f"README link {link!r} is not of the form {REPO_URL}/blob/main/PATH"
            assert (ROOT / m.group(1)).exists(), f"README link {link!r}: no {m.group(1)} in the repository"


# --- tapegrad.numpy's exports, as type checkers see them -------------------------------------

# tapegrad/numpy/__init__.py's own imports, not exports
NOT_EXPORTED = {"annotations", "Any", "TYPE_CHECKING"}


def test_numpy_all_lists_exactly_its_public_names() -> None:
    import tapegrad.numpy as tnp

    exported = set(tnp.__all__)
    assert len(exported) == len(tnp.__all__), "tapegrad.numpy.__all__ names a function twice"
    missing = sorted(n for n in exported if n not in vars(tnp))
    assert not missing, f"tapegrad.numpy.__all__ names what the module does not define: {missing}"
    public = {n for n, v in vars(tnp).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)} - NOT_EXPORTED
    unlisted = sorted(public - exported)
    assert not unlisted, f"public names of tapegrad.numpy missing from its __all__: {unlisted}"
    assert {"fft", "linalg", "primitives"} <= exported  # the documented subpackages
    assert {"sum", "argmax", "where", "pi"} <= exported


def test_mypy_strict_accepts_tnp_names(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import tapegrad.numpy as tnp\n\n"
                       "x = tnp.sum(tnp.ones(3))\n"
                       "i = tnp.argmax(tnp.linalg.inv(tnp.eye(2)))\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
                           "--cache-dir", str(tmp_path / ".mypy_cache"), str(snippet)],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr


# calls of tapegrad.numpy's families: each returns tapegrad.typing.Array, not Any
TYPED_CALLS = ["tnp.sum(x)", "tnp.sum(x, axis=0, keepdims=True)", "tnp.max(x)", "tnp.prod(x)",
               "tnp.cumsum(x)", "tnp.mean(x)", "tnp.std(x)", "tnp.sin(x)", "tnp.tanh(x)",
               "tnp.add(x, 1.0)", "tnp.exp(x)", "tnp.dot(x, x)", "tnp.matmul(x, x)",
               "tnp.reshape(x, (3, 1))", "tnp.concatenate([x, x])", "tnp.flip(x)", "tnp.sqrt(x) * 2 + 1",
               "tnp.sum(x)[0]", "2.0 * tnp.sin(x)"]


def test_tnp_functions_say_what_goes_in_and_comes_out(tmp_path: Path) -> None:
    """mypy sees ``tapegrad.numpy``'s functions as taking ``ArrayLike`` and returning
    ``Array`` (an ndarray or a traced value), not ``Any``; wrong arguments are errors."""
    pytest.importorskip("mypy")
    good = tmp_path / "good.py"
    lines = ["import numpy as np", "import tapegrad.numpy as tnp",
             "from tapegrad.typing import Array, ArrayLike", "", "x = np.ones(3)"]
    lines += [f"reveal_type({c})" for c in TYPED_CALLS]
    lines += ["", "def loss(w: ArrayLike, v: ArrayLike) -> Array:",
              "    return tnp.sum(tnp.tanh(tnp.dot(v, w)) ** 2) / 2.0", "",
              "a: Array = np.ones(3)", "b: Array = loss(a, [1.0, 2.0, 3.0])", "print(b.shape, b.ndim, -b)"]
    good.write_text("\n".join(lines) + "\n")
    bad = tmp_path / "bad.py"
    bad.write_text("import tapegrad.numpy as tnp\n\ntnp.sum(object())\ntnp.sin({'a': 1})\n"
                   "tnp.dot(1.0)\nn: int = tnp.sum([1.0])\n")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
           "--cache-dir", str(tmp_path / ".mypy_cache")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cmd, str(good)], cwd=tmp_path, capture_output=True, text=True, env=env)
    out = proc.stdout + proc.stderr
    revealed = re.findall(r'Revealed type is "([^"]*)"', out)
    assert len(revealed) == len(TYPED_CALLS), out
    for call, t in zip(TYPED_CALLS, revealed):
        assert "tapegrad.typing.TracedArray" in t, f"{call}: {t}"
    assert "error:" not in out, out
    proc = subprocess.run([*cmd, str(bad)], cwd=tmp_path, capture_output=True, text=True, env=env)
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if ": error:" in line]
    assert [int(e.split(":")[1]) for e in errors] == [3, 4, 5, 6], errors
