"""The facade imports the public API of tapegrad.numpy, tapegrad.scipy and the core only.

Every module under ``tapegrad/torch/`` is parsed (not imported) with :mod:`ast`.
What it takes from the rest of tapegrad must be public:

- the modules it imports (or reaches as an attribute of an imported module)
  are in ``PUBLIC_MODULES``: never ``tapegrad.numpy.wrap`` (the primitives'
  private table), ``tapegrad.numpy.derived``, ``vjps`` / ``jvps`` or a
  ``_private`` module;
- the names it imports from them, and the attributes it reads off them, have
  no leading underscore.
"""

from __future__ import annotations

import ast
import importlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FACADE = "tapegrad/torch"

# the modules outside the facade whose public names the facade may use
PUBLIC_MODULES = {
    "tapegrad",
    "tapegrad.numpy", "tapegrad.numpy.primitives", "tapegrad.numpy.linalg", "tapegrad.numpy.fft",
    "tapegrad.scipy", "tapegrad.scipy.special",
    "tapegrad.core.tape", "tapegrad.core.graph_tape", "tapegrad.core.traced", "tapegrad.core.primitive", "tapegrad.backend",
    "tapegrad.core", "tapegrad.core.level", "tapegrad.core.engine_ops", "tapegrad.batching",
    "tapegrad.pytree", "tapegrad.optimizers", "tapegrad.distributed",
}


def _resolve(dotted: str) -> Any:
    mod, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(mod), name)


def _is_module(dotted: str) -> bool:
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def _facade_files() -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, FACADE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                yield os.path.relpath(os.path.join(dirpath, fn), ROOT).replace(os.sep, "/")


def _outside(module: str) -> bool:
    return (module == "tapegrad" or module.startswith("tapegrad.")) and not (
        module == FACADE.replace("/", ".") or module.startswith(FACADE.replace("/", ".") + "."))


def _violations(path: str) -> list[str]:
    """Each use of a non-public module or name of tapegrad outside the facade, as ``"line: what"``."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return _violations_in(f.read(), path)


def _violations_in(source: str, path: str) -> list[str]:
    tree = ast.parse(source, path)
    out: list[str] = []
    modules: dict[str, str] = {}  # local name -> the tapegrad module it is bound to

    def use_module(dotted: str, line: int) -> None:
        if dotted not in PUBLIC_MODULES:
            out.append(f"{line}: module {dotted}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _outside(a.name):
                    use_module(a.name, node.lineno)
                    modules[a.asname or a.name.partition(".")[0]] = a.name if a.asname else a.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _outside(node.module):
            use_module(node.module, node.lineno)
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if _is_module(sub):
                    use_module(sub, node.lineno)
                    modules[a.asname or a.name] = sub
                elif a.name.startswith("_"):
                    out.append(f"{node.lineno}: name {sub}")
    for node in ast.walk(tree):  # ``m.attr`` (and ``m.sub.attr``) read off an imported module
        if not isinstance(node, ast.Attribute):
            continue
        chain = [node.attr]
        base: ast.expr = node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not (isinstance(base, ast.Name) and base.id in modules):
            continue
        mod = modules[base.id]
        for attr in reversed(chain):
            if attr.startswith("_"):
                out.append(f"{node.lineno}: name {mod}.{attr}")
                break
            if not _is_module(f"{mod}.{attr}"):
                break
            mod = f"{mod}.{attr}"
            use_module(mod, node.lineno)
    return sorted(set(out), key=lambda s: (int(s.partition(":")[0]), s))


@pytest.mark.parametrize("path", list(_facade_files()))
def test_facade_module_uses_public_names_only(path: str) -> None:
    bad = _violations(path)
    assert not bad, f"{path} uses private parts of tapegrad:\n  " + "\n  ".join(bad)


def test_the_checker_sees_private_uses() -> None:
    """The checker itself: each kind of private use is reported, public ones are not."""
    src = (
        "import tapegrad.numpy as tnp\n"
        "from tapegrad.numpy import wrap as _w\n"
        "from tapegrad.numpy.derived import swapaxes\n"
        "from tapegrad.core.tape import _walk, backprop\n"
        "from tapegrad.core import tape as _tape\n"
        "from tapegrad.numpy import primitives as tp\n"
        "tnp._np, tnp.wrap.exp, tnp.exp, _tape._stack, _tape.backprop, tp.where_mask, _w.exp\n"
    )
    assert _violations_in(src, "probe.py") == [
        "2: module tapegrad.numpy.wrap", "3: module tapegrad.numpy.derived", "4: name tapegrad.core.tape._walk",
        "7: module tapegrad.numpy.wrap", "7: name tapegrad.core.tape._stack", "7: name tapegrad.numpy._np",
    ]


def test_public_modules_document_their_names() -> None:
    """Every name of ``tapegrad.numpy.primitives`` (and the softmaxes) has a docstring."""
    from tapegrad.numpy import primitives
    from tapegrad.scipy import special

    assert primitives.__doc__
    for name in primitives.__all__:
        assert getattr(primitives, name).__doc__, name
    for fn in (special.softmax, special.log_softmax):
        assert fn.__doc__, fn
