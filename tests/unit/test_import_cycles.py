"""The contract's no-circles rule: no storm_py module imports one that imports it back, by any kind of import.

The graph is grimp's (what import-linter reads) with every import in it: at module level, inside a function body
(deferred, but a dependency all the same) and under ``if TYPE_CHECKING:`` (a type is a dependency too).  A name
two modules share moves down, or the lower module declares the ``Protocol`` it needs of the upper one.
"""

from __future__ import annotations

import ast
import functools

import grimp

from tests.unit.sources import parsed_sources


@functools.cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("storm_py", exclude_type_checking_imports=False, cache_dir=None)


def import_edges() -> dict[str, set[str]]:
    """storm_py module -> the storm_py modules it imports, wherever the import sits."""
    graph = _graph()
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One circle (``a -> b -> ... -> a``) per strongly connected group of modules, found by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1 or v in edges.get(v, ()):
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_one_circle(edges, group) for group in groups]


def _one_circle(edges: dict[str, set[str]], group: set[str]) -> list[str]:
    """The shortest path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle through {start} in {sorted(group)}")


def test_circles_finds_a_circle_and_names_its_modules():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert sorted(circles(edges)) == [["a", "b", "c", "a"], ["e", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def _imports_off_module_level() -> list[tuple[str, str, str]]:
    """``(module, imported storm_py module or name, where)`` of each import inside a function or under
    ``TYPE_CHECKING``."""
    out = []
    for path, _, tree in parsed_sources():
        name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        blocks: list[tuple[str, ast.AST]] = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                blocks.append(("function", node))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                blocks.append(("TYPE_CHECKING", node))
        for where, block in blocks:
            for imp in ast.walk(block):
                if isinstance(imp, ast.ImportFrom) and imp.level == 0 and (imp.module or "").startswith("storm_py"):
                    # ``from package import name``: ``name`` is a submodule or a name of the package
                    out += [(name, f"{imp.module}.{a.name}", where) for a in imp.names]
                elif isinstance(imp, ast.Import):
                    out += [(name, a.name, where) for a in imp.names if a.name.startswith("storm_py")]
    return out


def test_the_graph_holds_function_level_and_type_checking_imports():
    """Every import inside a function or under ``if TYPE_CHECKING:`` is an edge of the graph checked below."""
    edges = import_edges()
    graph = _graph()
    missing = []
    for importer, imported, where in _imports_off_module_level():
        target = imported  # the imported module: the longest prefix of the dotted name that is one
        while target not in graph.modules and "." in target:
            target = target.rsplit(".", 1)[0]
        if target != importer and target not in edges.get(importer, set()):
            missing.append(f"{importer} -> {imported} ({where})")
    assert not missing, "imports the circle check would not see:\n" + "\n".join(missing)


def test_no_import_circle_in_storm_py():
    edges = import_edges()
    assert edges.get("storm_py.nimbus.core"), "the import graph came out empty"
    found = circles(edges)
    assert not found, "import circles between storm_py modules, counting imports inside functions and under " \
        "TYPE_CHECKING (break them: move the shared name down, or take a Protocol):\n" + \
        "\n".join(" -> ".join(c) for c in found)
