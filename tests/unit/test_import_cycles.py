"""The contract's no-circles rule: no storm_py module imports, at module level, one that imports it back.

The graph is grimp's (what import-linter reads), without ``if TYPE_CHECKING:`` imports; an import inside a
function body runs only when called, so it is left out of that rule, while one at module level (in a class body
or a top-level ``if``/``try`` too) counts.  Circles that function-level imports close are held to the groups
listed in ``DEFERRED_CIRCLES``: each may shrink, none may grow, and no other may appear.
"""

from __future__ import annotations

import ast
import functools

import grimp

from tests.unit.sources import parsed_sources


def _deferred_import_lines() -> dict[str, set[int]]:
    """Per module name: the line numbers of imports inside function bodies."""
    out: dict[str, set[int]] = {}
    for path, _, tree in parsed_sources():
        name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        lines: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                lines |= {n.lineno for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
        out[name] = lines
    return out


@functools.cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("storm_py", exclude_type_checking_imports=True, cache_dir=None)


def module_level_imports(deferred_too: bool = False) -> dict[str, set[str]]:
    """storm_py module -> the storm_py modules it imports at module level (``deferred_too``: in functions too)."""
    graph = _graph()
    deferred = _deferred_import_lines()
    edges: dict[str, set[str]] = {m: set() for m in graph.modules}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            details = graph.get_import_details(importer=importer, imported=imported)
            lines = {d["line_number"] for d in details}
            if deferred_too or not details or lines - deferred.get(importer, set()):
                edges[importer].add(imported)
    return edges


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


def test_no_module_level_import_circle_in_storm_py():
    edges = module_level_imports()
    assert edges.get("storm_py.nimbus.core"), "the import graph came out empty"
    found = circles(edges)
    assert not found, "import circles between storm_py modules (break them: move the shared name down, or " \
        "take a Protocol):\n" + "\n".join(" -> ".join(c) for c in found)


#: groups of modules still in a circle through an import inside a function (each group a strongly connected set)
DEFERRED_CIRCLES = (
    {"storm_py.trident.drpc", "storm_py.trident.planner", "storm_py.trident.stream"},
)


def test_no_new_circle_through_a_function_level_import():
    found = [c for c in circles(module_level_imports(deferred_too=True))
             if not any(set(c) <= allowed for allowed in DEFERRED_CIRCLES)]
    assert not found, "new import circles through function-level imports (break them, as the module-level " \
        "ones):\n" + "\n".join(" -> ".join(c) for c in found)
