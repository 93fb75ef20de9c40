"""Static facts about a cell's source, read from its syntax tree before anything runs:
which names it assigns and which of those are results (not read again later), whether
its last line is an expression IPython would display, which lines sit inside a `try`,
and what construct asks for a truth value at a given place (for graph-break reasons).
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

# The name a cell's last expression is assigned to while it is traced; it never reaches
# the user's namespace (the value is displayed and recorded as Out[n], as IPython does).
LAST_VALUE = "__fuselab_last_value__"


@dataclass(frozen=True)
class CellNames:
    assigned: tuple[str, ...]   # every name the cell binds, in first-binding order
    results: tuple[str, ...]    # assigned names not read by any later statement


@dataclass(frozen=True)
class CellInfo:
    tree: ast.Module                      # the cell, its last expression assigned to LAST_VALUE
    names: CellNames
    displays: bool                        # the last line is an expression IPython would show
    try_lines: frozenset[int]             # lines inside a try body (errors there are caught)
    truth_uses: dict[tuple[int, int, int, int], str]  # expression position -> 'if', 'while', ...


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
    elif isinstance(st, (ast.While, ast.If)):
        roots = [st.test]
    elif isinstance(st, (ast.With, ast.AsyncWith)):
        roots = list(st.items)
    elif isinstance(st, ast.Try):
        roots = []  # `except E as e` unbinds e after the handler
    else:
        roots = [st]
    for r in roots:
        yield from ast.walk(r)


def cell_names(source: str | ast.Module) -> CellNames:
    tree = ast.parse(source) if isinstance(source, str) else source
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
            if name == LAST_VALUE:
                continue
            if name not in last_store:
                order.append(name)
            last_store[name] = pos
    # a function, lambda or generator expression reads its globals when it runs, which may
    # be after the cell (`f = lambda: t + 1`, called by a later cell): t must be bound
    later = _deferred_loads(tree)
    results = tuple(n for n in order if n in later or not any(p > last_store[n] for p in loads.get(n, ())))
    return CellNames(tuple(order), results)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.GeneratorExp)


def _deferred_loads(tree: ast.AST) -> set[str]:
    """Names read by code that runs when called or iterated, not where it stands: bodies
    of functions and lambdas, generator expressions (but their first iterable), less
    the names that code binds itself (parameters, its own assignments)."""
    out: set[str] = set()
    for scope in ast.walk(tree):
        if not isinstance(scope, _SCOPES):
            continue
        if isinstance(scope, ast.GeneratorExp):
            own = {n.id for g in scope.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            roots: list[ast.AST] = [scope.elt, *scope.generators[0].ifs, *scope.generators[1:]]
        else:
            a = scope.args
            own = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p is not None}
            body = scope.body if isinstance(scope.body, list) else [scope.body]
            roots = list(body)
            declared = {n for st in body for d in ast.walk(st) if isinstance(d, (ast.Global, ast.Nonlocal))
                        for n in d.names}
            own |= {d.id for st in body for d in ast.walk(st)
                    if isinstance(d, ast.Name) and isinstance(d.ctx, ast.Store)} - declared
        out |= {d.id for r in roots for d in ast.walk(r)
                if isinstance(d, ast.Name) and isinstance(d.ctx, ast.Load) and d.id not in own}
    return out


def _ends_with_semicolon(source: str) -> bool:
    """IPython shows a cell's last expression unless the cell ends with ';'."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                  tokenize.DEDENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError):
        return False
    return bool(toks) and toks[-1].string == ";"


def _try_lines(tree: ast.Module) -> frozenset[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            for st in node.body:
                lines.update(range(st.lineno, (st.end_lineno or st.lineno) + 1))
    return frozenset(lines)


def _truth_uses(tree: ast.Module) -> dict[tuple[int, int, int, int], str]:
    """Where Python asks an expression for a truth value, and for what."""
    out: dict[tuple[int, int, int, int], str] = {}

    def mark(e: ast.AST, what: str) -> None:
        if isinstance(e, ast.expr):
            out.setdefault((e.lineno, e.end_lineno or e.lineno, e.col_offset, e.end_col_offset or 0), what)

    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            mark(node.test, "if")
        elif isinstance(node, ast.While):
            mark(node.test, "while")
        elif isinstance(node, ast.IfExp):
            mark(node.test, "a conditional expression")
        elif isinstance(node, ast.Assert):
            mark(node.test, "assert")
        elif isinstance(node, ast.BoolOp):
            for v in node.values:
                mark(v, "and/or")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            mark(node.operand, "not")
        elif isinstance(node, ast.comprehension):
            for cond in node.ifs:
                mark(cond, "a comprehension's if")
    return out


def analyse(source: str) -> CellInfo:
    """Parse a cell (SyntaxError propagates) and gather its static facts."""
    tree = ast.parse(source)
    displays = bool(tree.body) and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(source)
    names = cell_names(tree)
    if displays:
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(LAST_VALUE, ast.Store())], value=last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    return CellInfo(tree, names, displays, _try_lines(tree), _truth_uses(tree))
