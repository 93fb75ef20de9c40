"""fuselab's modules import each other one way: no cycle, counting the imports inside
functions too (a lazy import that dodges a cycle at run time is still a cycle in the
design: neither module can be read or changed without the other).

An edge A -> B is an `import B`, `from B import x` or `from B import module` (then to
B.module) anywhere in A, relative or absolute. Importing a.b runs a/__init__.py first,
but that alone is no dependency of the importer on the package's contents, so it is not
an edge."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "fuselab"


def module_names() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The fuselab modules that module `name` (at `path`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules `start` imports, directly or not."""
    seen, todo = set(), [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[tuple[list[str], set[str]]]:
    """(a shortest cycle, the modules that import each other) for each knot of modules
    that import each other, directly or not."""
    reaches = {v: reach(graph, v) for v in graph}
    knots: list[set[str]] = []
    for v in sorted(graph):
        knot = {w for w in reaches[v] if v in reaches[w]}
        if v in knot and knot not in knots:
            knots.append(knot)
    return [(shortest_cycle(graph, knot), knot) for knot in knots]


def shortest_cycle(graph: dict[str, set[str]], knot: set[str]) -> list[str]:
    """A shortest cycle within the knot (breadth first from each module of it)."""
    best: list[str] = []
    for start in sorted(knot):
        paths = {start: [start]}
        frontier = [start]
        while frontier and (not best or len(paths[frontier[0]]) < len(best)):
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & knot):
                    if w == start and (not best or len(paths[v]) < len(best)):
                        best = paths[v] + [start]
                    elif w not in paths:
                        paths[w] = paths[v] + [w]
                        nxt.append(w)
            frontier = nxt
    return best


def test_the_walk_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "fuselab.plan.search.planner" in graph["fuselab.plan.search"]       # from .planner import
    assert "fuselab.plan.model" in graph["fuselab.codegen"]                   # from ..plan.model import
    assert "fuselab.plan.cost" in graph["fuselab.session"]                    # inside a method


def test_no_module_of_fuselab_imports_itself_back():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(
        " -> ".join(cycle) + (f" (in a knot of {len(knot)}: {', '.join(sorted(knot))})"
                              if len(knot) > len(cycle) - 1 else "")
        for cycle, knot in found)
