"""The core knows the ``Level`` interface and nothing above it.

The core (``tapegrad/core/``: the level stack, the traced value, the
primitive, the tapes, the engine's own primitives) imports nothing of the
transforms, ``tapegrad.numpy``, ``jit``, ``vmap`` or the facade, not even
inside a function; its code names none of them; and no module of the package
writes into another module's namespace when it is imported (registration
goes through a declared table or function, never ``other_module.x = ...``).
"""

from __future__ import annotations

import ast
import os
import re

from test_imports import ROOT, build_graph

CORE = "tapegrad.core"
# what the core may use beside itself: utilities that know no level
CORE_MAY_IMPORT = {"tapegrad._where", "tapegrad._gc", "tapegrad.pytree", "tapegrad.backend",
                   "tapegrad.axes"}
# names of what sits above the core, as code (identifiers, strings) would spell them
ABOVE = re.compile(r"vmap|jit|batching|BatchTrace|JitTrace|torch|facade|pytorch", re.IGNORECASE)


def _core_modules() -> dict[str, str]:
    g = build_graph()
    return {name: rel for name, rel in g.modules.items() if name == CORE or name.startswith(CORE + ".")}


def test_the_core_exists() -> None:
    names = set(_core_modules())
    assert {f"{CORE}.level", f"{CORE}.traced", f"{CORE}.primitive", f"{CORE}.tape",
            f"{CORE}.graph_tape"} <= names


def test_the_core_imports_nothing_above_it() -> None:
    g = build_graph()
    core = set(_core_modules())
    bad = []
    for edges in (g.module_level, g.function_level):
        for (a, b), where in edges.items():
            if a in core and b not in core and b not in CORE_MAY_IMPORT and b != "tapegrad":
                bad.append(f"{a} -> {b} at {', '.join(where)}")
            if a in core and b == "tapegrad":
                bad.append(f"{a} -> tapegrad (the package's __init__ imports every level) at {', '.join(where)}")
    assert not bad, "the core imports above itself:\n" + "\n".join(sorted(bad))


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def test_the_core_code_names_no_level_above_it() -> None:
    bad = []
    for rel in _core_modules().values():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            source = f.read()
        tree = ast.parse(source, rel)
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                text = node.value
            elif isinstance(node, ast.Name):
                text = node.id
            elif isinstance(node, ast.Attribute):
                text = node.attr
            elif isinstance(node, ast.arg):
                text = node.arg
            if text is not None and ABOVE.search(text):
                bad.append(f"{rel}:{getattr(node, 'lineno', '?')}: {text[:80]!r}")
        for i, line in enumerate(source.splitlines(), 1):
            code, sep, comment = line.partition("#")
            if sep and ABOVE.search(comment) and '"' not in code and "'" not in code:
                bad.append(f"{rel}:{i}: comment {comment.strip()[:80]!r}")
    assert not bad, "the core names what sits above it:\n" + "\n".join(bad)


def test_no_module_writes_into_another_at_import() -> None:
    """``other.name = value`` at module level, where ``other`` is an imported
    tapegrad module (``from tapegrad.core import tape as _tape; _tape.x = ...``)."""
    g = build_graph()
    bad = []
    for rel in g.modules.values():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            tree = ast.parse(f.read(), rel)
        modules = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tapegrad"):
                for a in node.names:
                    if f"{node.module}.{a.name}" in g.modules:
                        modules.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("tapegrad"):
                        modules.add(a.asname or a.name.partition(".")[0])
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                            and sub.value.id in modules:
                        bad.append(f"{rel}:{node.lineno}: {sub.value.id}.{sub.attr} = ...")
    assert not bad, "modules write into other modules at import:\n" + "\n".join(bad)
