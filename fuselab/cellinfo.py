"""Static facts about a cell's source: which names it assigns and which of those are
results (not read again later in the cell)."""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class CellNames:
    assigned: tuple[str, ...]   # every name the cell binds, in first-binding order
    results: tuple[str, ...]    # assigned names not read by any later statement


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements in execution-text order, compound statements' bodies flattened after
    their header (the header itself counts as one statement)."""
    out: list[ast.stmt] = []
    for st in body:
        out.append(st)
        for field in ("body", "orelse", "finalbody"):
            sub = getattr(st, field, None)
            if isinstance(sub, list) and not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                              ast.ClassDef)):
                out.extend(_statements(sub))
        for h in getattr(st, "handlers", []) or []:
            out.extend(_statements(h.body))
    return out


def _own_nodes(st: ast.stmt):
    """The AST nodes of a statement, excluding nested statement bodies (counted apart)."""
    if isinstance(st, (ast.For, ast.AsyncFor)):
        roots: list[ast.AST] = [st.target, st.iter]
    elif isinstance(st, ast.While) or isinstance(st, ast.If):
        roots = [st.test]
    elif isinstance(st, (ast.With, ast.AsyncWith)):
        roots = list(st.items)
    elif isinstance(st, ast.Try):
        roots = []
    else:
        roots = [st]
    for r in roots:
        yield from ast.walk(r)


def cell_names(source: str) -> CellNames:
    tree = ast.parse(source)
    stmts = _statements(tree.body)
    last_store: dict[str, int] = {}
    loads: dict[str, list[int]] = {}
    order: list[str] = []
    for pos, st in enumerate(stmts):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names_stored = [st.name]
            nodes = []
            # a function body reads globals when called; count its loads here
            for d in ast.walk(st):
                if isinstance(d, ast.Name) and isinstance(d.ctx, ast.Load):
                    loads.setdefault(d.id, []).append(pos)
        else:
            nodes = list(_own_nodes(st))
            names_stored = [n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
            if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
                loads.setdefault(st.target.id, []).append(pos)
        for n in nodes:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                loads.setdefault(n.id, []).append(pos)
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            names_stored += [(a.asname or a.name).split(".")[0] for a in st.names]
        for name in names_stored:
            if name not in last_store:
                order.append(name)
            last_store[name] = pos
    results = tuple(n for n in order if not any(p > last_store[n] for p in loads.get(n, ())))
    return CellNames(tuple(order), results)
