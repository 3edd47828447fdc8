"""The package's own imports point one way, and its files stay a readable size.

Every module under ``tapegrad/`` is parsed (not imported) with :mod:`ast` and
each import of another ``tapegrad`` module becomes an edge of a graph:

- ``import a.b.c`` runs ``a``, ``a.b`` and ``a.b.c``: an edge to each that is
  not a package enclosing the importer (those have already started running);
- ``from a.b import x`` is an edge to ``a.b.x`` when that is a module, else to
  the package ``a.b`` (its ``__init__.py``, which must have defined ``x``), and
  also to ``a.b`` itself whenever it does not enclose the importer;
- relative imports are resolved against the importer's package, and
  ``if TYPE_CHECKING:`` blocks are skipped (they never run).

Imports at module level (including class bodies and top-level ``if``/``try``)
and imports inside functions are kept apart: a cycle of module-level imports
makes import order matter, so it fails the first test outright (bar the
listed exceptions); a cycle that needs a function-level (lazy) import works at
run time but still points backwards, and the second test reports those.

The exceptions are edges ``(importer, imported)``: the test drops them and
asserts what is left is acyclic, and it fails on an entry that no longer
matches an import, so the lists can only shrink.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "tapegrad"

Edge = tuple[str, str]

# Module-level imports that close a cycle and cannot be removed without
# changing code another change owns; each names the import that is the back edge.
MODULE_LEVEL_EXCEPTIONS: dict[Edge, str] = {}

# Function-level (lazy) imports that close a cycle, with why they stay. Both are
# methods of Tensor calling code that builds Tensors (so imports _tensor at module
# level); undoing them means moving that code into _tensor.py, which is the wrong
# way for a 2,700-line file.
FUNCTION_LEVEL_EXCEPTIONS: dict[Edge, str] = {
    ("tapegrad.torch._tensor_base", "tapegrad.torch.autograd"):
        "Tensor.backward calls autograd.backward (autograd/_engine.py), which makes the seeds and the "
        "accumulated .grad as Tensors",
}

# Files over MAX_LINES today; the list may only shrink.
MAX_LINES = 700
LONG_FILES: set[str] = set()


# --- the import graph ------------------------------------------------------------------------


@dataclass
class Graph:
    modules: dict[str, str] = field(default_factory=dict)  # dotted name -> path relative to ROOT
    packages: set[str] = field(default_factory=set)
    # (importer, imported) -> the "path:line" of each import statement that makes the edge
    module_level: dict[Edge, list[str]] = field(default_factory=dict)
    function_level: dict[Edge, list[str]] = field(default_factory=dict)


def _module_files() -> Iterator[tuple[str, str, bool]]:
    """``(dotted name, path relative to ROOT, is a package)`` for every module of the package."""
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PKG)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        for fn in sorted(filenames):
            if not fn.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), ROOT)
            parts = rel[:-3].split(os.sep)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            yield ".".join(parts), rel.replace(os.sep, "/"), is_pkg


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import statement that can run, and whether it sits inside a function."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:  # only the ``else`` branch runs
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), in_function)
            else:
                inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                yield from walk(child, inner)

    yield from walk(tree, False)


def _encloses(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def _targets(g: Graph, importer: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules whose code an import statement runs or reads names from."""
    out: set[str] = set()

    def add_chain(name: str) -> None:  # ``import a.b.c`` runs a, a.b, a.b.c
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            mod = ".".join(parts[:i])
            if mod in g.modules and mod != importer and not _encloses(mod, importer):
                out.add(mod)

    if isinstance(node, ast.Import):
        for alias in node.names:
            add_chain(alias.name)
        return out
    if node.level:
        base = importer if importer in g.packages else importer.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        source = base + ("." + node.module if node.module else "")
    else:
        source = node.module or ""
    if source != PKG and not source.startswith(PKG + "."):
        return out
    add_chain(source)
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        if alias.name != "*" and sub in g.modules:
            if sub != importer:
                out.add(sub)
        elif source in g.modules and source != importer:
            out.add(source)  # a name defined by the package's __init__.py (or by the module)
    return out


def build_graph() -> Graph:
    g = Graph()
    for name, rel, is_pkg in _module_files():
        g.modules[name] = rel
        if is_pkg:
            g.packages.add(name)
    for name, rel in g.modules.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            tree = ast.parse(f.read(), rel)
        for node, in_function in _imports(tree):
            edges = g.function_level if in_function else g.module_level
            for target in _targets(g, name, node):
                edges.setdefault((name, target), []).append(f"{rel}:{node.lineno}")
    return g


# --- cycles ----------------------------------------------------------------------------------


def strongly_connected(edges: set[Edge]) -> list[list[str]]:
    """The strongly connected components that hold a cycle (Tarjan's algorithm, iterative)."""
    adj: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[list[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(adj[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(adj[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1 or (v, v) in edges:
                        comps.append(sorted(comp))
    return sorted(comps)


def _shortest_cycle(start: str, members: set[str], edges: set[Edge]) -> list[str]:
    """A shortest cycle ``[start, ..., start]`` inside ``members``."""
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for a, w in sorted(edges):
                if a != v or w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def describe_cycles(edges: set[Edge], where: dict[Edge, list[str]]) -> str:
    """Each strongly connected component: a shortest cycle, then every import inside it."""
    out = []
    for comp in strongly_connected(edges):
        members = set(comp)
        out.append("cycle: " + " -> ".join(_shortest_cycle(comp[0], members, edges)))
        out.append(f"  the {len(comp)} modules {comp} import each other by:")
        for a, b in sorted(e for e in edges if e[0] in members and e[1] in members):
            out.append(f"    {a} -> {b}  at {', '.join(where[(a, b)])}")
    return "\n".join(out)


# --- tests -----------------------------------------------------------------------------------


def test_the_graph_sees_the_import_forms() -> None:
    g = build_graph()
    me = g.module_level
    # ``from package import module`` is an edge to the module, not to the package
    assert ("tapegrad.torch.nn.modules.linear", "tapegrad.torch.nn.functional") in me
    assert ("tapegrad.torch.nn.modules.linear", "tapegrad.torch.nn") not in me
    # ``from package import name`` reads the package's __init__.py
    assert ("tapegrad.torch.nn", "tapegrad.torch.nn.modules") in me
    # ``import tapegrad.numpy as tnp`` runs tapegrad/numpy/__init__.py, not tapegrad/__init__.py
    assert any(a == "tapegrad.torch._tensor_base" and b == "tapegrad.numpy" for a, b in me)
    assert ("tapegrad.torch._tensor_base", "tapegrad") not in me


def test_no_import_cycles_at_module_level() -> None:
    g = build_graph()
    stale = [e for e in MODULE_LEVEL_EXCEPTIONS if e not in g.module_level]
    assert not stale, f"these listed exceptions no longer match a module-level import: {stale}"
    edges = set(g.module_level) - set(MODULE_LEVEL_EXCEPTIONS)
    assert not strongly_connected(edges), "module-level import cycles:\n" + describe_cycles(
        edges, g.module_level)


def test_no_import_cycles_through_function_level_imports() -> None:
    g = build_graph()
    stale = [e for e in FUNCTION_LEVEL_EXCEPTIONS if e not in g.function_level]
    assert not stale, f"these listed exceptions no longer match a function-level import: {stale}"
    where = {**g.function_level, **g.module_level}
    for e, lines in g.function_level.items():
        if e in g.module_level:
            where[e] = g.module_level[e] + [f"{x} (in a function)" for x in lines]
        else:
            where[e] = [f"{x} (in a function)" for x in lines]
    edges = (set(g.module_level) | set(g.function_level)) - set(MODULE_LEVEL_EXCEPTIONS) \
        - set(FUNCTION_LEVEL_EXCEPTIONS)
    assert not strongly_connected(edges), (
        "import cycles that close through imports inside functions:\n" + describe_cycles(edges, where))


def test_no_file_is_too_long() -> None:
    g = build_graph()
    lengths = {}
    for rel in g.modules.values():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            lengths[rel] = sum(1 for _ in f)
    too_long = {rel: n for rel, n in lengths.items() if n > MAX_LINES and rel not in LONG_FILES}
    assert not too_long, f"files over {MAX_LINES} lines (split them): {too_long}"
    fixed = sorted(rel for rel in LONG_FILES if lengths.get(rel, 0) <= MAX_LINES)
    assert not fixed, f"now at most {MAX_LINES} lines (or gone): drop them from LONG_FILES: {fixed}"
