"""Expressions of a kernel's values at symbolic coordinates, as Python statements.

`PyEmitter.value(node, coords)` returns a Python expression (a name or a typed literal)
for the value of `node` at the element with coordinates `coords` (affine expressions over
the kernel's loop variables, fuselab.codegen.index), appending the statements that need:
one assignment per elementwise op with the user's source line as a comment, views folded
into index math, constants as typed literals. Each (node, coordinates) pair is emitted
once. Where data come from is the template's business: it passes a `load` callback.
"""
from __future__ import annotations

import keyword
import re
from typing import Callable, Mapping, Sequence

import numpy as np

from ..codegen import index as ix
from ..codegen.model import CodegenError  # noqa: F401 - one error for both backends' templates
from ..codegen.emit import array_name, indent, unwrap, view_coords  # noqa: F401 - backend-neutral helpers, shared
from ..ir import Graph, Node, special_exponent
from ..ops import Kind
from .pyops import ELEMWISE, mixed_compare, special_power
from .pytypes import cast, ctor, is_half, literal, register

Coords = tuple[ix.Affine, ...]
LoadFn = Callable[[int, ix.Affine], str]


_RESERVED = frozenset(keyword.kwlist) | frozenset(
    "np numba njit prange cfunc carray phase args range min max abs len int float bool True False None ix "
    "i r c row col o u j k part o0 n_o n_c lo hi r_b col_b k_b k_e r_c col_c".split())   # and the templates' loop variables


class Names:
    """Unique Python identifiers for one generated module."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        self.used: set[str] = set(_RESERVED) | set(taken)

    def fresh(self, base: str) -> str:
        # ASCII, as the CUDA backend's (codegen.emit.sanitize): a notebook's `β` becomes
        # u3b2, other characters _. Python reads an identifier NFKC-normalised, so `ﬁ` and
        # `fi` (or `ℌ` and `H`) kept as they are were one variable in the generated code,
        # and an input named `a²` through the API no identifier at all.
        base = re.sub(r"[^0-9A-Za-z_]", lambda m: f"u{ord(m.group()):x}" if ord(m.group()) > 127 else "_", base) or "v"
        if base[0].isdigit() or base.startswith("fl_"):
            base = f"v_{base}"
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name


def comment(node: Node) -> str:
    if node.loc is None:
        return ""
    return f"  # line {node.loc.line}: {' '.join(node.loc.text.split())}"


def render(a: ix.Affine) -> str:
    """An affine index as a Python expression (`//` and `%` over non-negative values)."""
    def sym(s: ix.Sym) -> str:
        if isinstance(s, ix.Var):
            return s.name
        inner = render(s.base)
        if s.base.const or len(s.base.terms) != 1 or s.base.terms[0][1] != 1:
            inner = f"({inner})"
        text = inner if s.div == 1 else f"{inner} // {s.div}"
        if s.mod is not None:
            text = f"({text}) % {s.mod}" if s.div != 1 else f"{text} % {s.mod}"
        return f"({text})" if (s.div != 1 or s.mod is not None) else text

    parts: list[str] = []
    for s, c in a.terms:
        text = sym(s) if abs(c) == 1 else f"{sym(s)} * {abs(c)}"
        if not parts:
            parts.append(text if c > 0 else f"-{text}")
        else:
            parts.append(f"+ {text}" if c > 0 else f"- {text}")
    if a.const:
        parts.append(str(a.const) if not parts else (f"+ {a.const}" if a.const > 0 else f"- {-a.const}"))
    return " ".join(parts) or "0"


def has_divmod(a: ix.Affine) -> bool:
    return any(isinstance(s, ix.DivMod) for s, _ in a.terms)


# float16 ops whose result is exact in half for half operands (a sign, a select, a
# literal): NumPy's result is the operand's bits, so they are not rounded at all
HALF_EXACT_OPS = frozenset({"absolute", "negative", "positive", "sign", "copysign", "maximum", "minimum", "fmax",
                            "fmin", "where"})
# float16 ops that compute a new float32 value by IEEE arithmetic, as NumPy's float16
# loops do (in float32, or by libm): a NaN result is quiet on both sides, and the
# rounding needs no NaN case (fl_round_half_arith; its store: fl_to_half_arith)
HALF_ARITH_OPS = frozenset(
    "add subtract multiply true_divide square sqrt reciprocal power deg2rad rad2deg floor ceil trunc rint exp exp2 "
    "expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh arctan2 "
    "hypot cbrt".split())


def load_expr(array: str, dtype: np.dtype, offset: str) -> str:
    """The register value of array[offset] (float16: decoded from its bits)."""
    return f"fl_from_half({array}[ix({offset})])" if is_half(dtype) else f"{array}[ix({offset})]"


def store_expr(dtype: np.dtype, value: str) -> str:
    """A register value as it is stored (float16: its bits)."""
    return f"fl_to_half({value})" if is_half(dtype) else value


class PyEmitter:
    def __init__(self, graph: Graph, nodes: Sequence[int], inputs: Sequence[int], fp16_math: str,
                 names: Names, load: LoadFn, fixed: Mapping[int, str] | None = None) -> None:
        self.graph = graph
        self.nodes = frozenset(nodes)
        self.inputs = frozenset(inputs)
        self.fp16_numpy = fp16_math == "numpy"
        self.names = names
        self.load = load
        self.fixed: dict[int, str] = dict(fixed or {})
        self.lines: list[tuple[int, str]] = []     # (node id, statement); -1: loads
        self._memo: dict[tuple[int, Coords], str] = {}
        self._indices: list[ix.Affine] = []
        # values another loop computed and kept (a row kernel's row buffers): expressions
        # that read them, by (node, coordinates)
        self.preset: dict[tuple[int, Coords], str] = {}
        self._quiet: set[str] = set()      # half values rounded by fl_round_half_arith

    def emit(self, line: str, node: int = -1) -> None:
        self.lines.append((node, line))

    def computes(self) -> bool:
        """Whether the statements emitted so far compute anything (more than loads)."""
        return any(nid >= 0 for nid, _ in self.lines)

    def take_lines(self) -> list[str]:
        """The statements emitted so far, in program order (node ids are topological;
        loads, id -1, come first)."""
        out = [line for _, line in sorted(self.lines, key=lambda t: t[0])]
        self.lines = []
        return out

    def indices(self) -> list[ix.Affine]:
        """Every array offset loaded and every generator index computed so far."""
        return list(self._indices)

    def computed(self) -> list[tuple[int, Coords]]:
        """The (node, coordinates) pairs this emitter has computed or loaded so far."""
        return list(self._memo)

    def name_of(self, nid: int, coords: Coords) -> str | None:
        return self._memo.get((nid, tuple(coords)))

    def forget(self) -> None:
        """A new scope: values computed so far are no longer visible."""
        self._memo.clear()

    def value(self, nid: int, coords: Coords) -> str:
        if nid in self.fixed:
            return self.fixed[nid]
        key = (nid, tuple(coords))
        if key in self.preset:
            return self.preset[key]
        if key not in self._memo:
            self._memo[key] = self._value(nid, tuple(coords))
        return self._memo[key]

    def stored(self, nid: int, coords: Coords) -> str:
        v = self.value(nid, coords)
        if v in self._quiet:     # a half value or a quiet NaN: the conversion needs no NaN case
            return f"fl_to_half_arith({v})"
        return store_expr(self.graph.nodes[nid].dtype, v)

    def _value(self, nid: int, coords: Coords) -> str:
        n = self.graph.nodes[nid]
        if nid in self.inputs:
            offset = ix.linearize(coords, n.shape)
            self._indices.append(offset)
            return self.load(nid, offset)
        if nid not in self.nodes:
            raise CodegenError(f"%{nid} ({n.op}) is neither computed in this kernel nor one of its inputs")
        if n.op in ("const", "full"):
            return literal(n.args["value"], n.dtype)
        if n.op == "arange":
            self._indices.append(coords[0])
            return self._assign(nid, arange_expr(n, render(coords[0])))
        if n.kind is Kind.INJECTIVE:
            return self.value(n.inputs[0], view_coords(self.graph, n, coords))
        if n.kind is Kind.ELEMWISE:
            expr = self._elemwise(n, coords)
            name = self._assign(nid, expr)
            if expr.startswith("fl_round_half_arith("):
                self._quiet.add(name)
            return name
        raise CodegenError(f"%{nid} ({n.op}) cannot be computed element by element here")

    def _assign(self, nid: int, expr: str) -> str:
        name = self.names.fresh(f"v{nid}")
        self.emit(f"{name} = {unwrap(expr)}{comment(self.graph.nodes[nid])}", nid)
        return name

    def _operand(self, n: Node, k: int, coords: Coords, ctype: np.dtype) -> str:
        src_id = n.inputs[k]
        src = self.graph.nodes[src_id]
        if src.op in ("const", "full") and src_id not in self.fixed:
            # NumPy's cast of the scalar, done here on the host: a literal of the loop type
            return literal(np.asarray(src.args["value"], src.dtype).astype(ctype).item(), ctype)
        v = self.value(src_id, ix.broadcast(coords, n.shape, src.shape))
        return cast(v, src.dtype, ctype)

    def _elemwise(self, n: Node, coords: Coords) -> str:
        if n.op == "astype":
            src = self.graph.nodes[n.inputs[0]]
            return cast(self.value(n.inputs[0], coords), src.dtype, n.dtype)
        ctype = np.dtype(n.args["ctype"])
        wants = n.operand_dtypes     # the loop's input types (they differ in int64 < uint64)
        ops = [self._operand(n, k, coords, np.dtype(bool) if (n.op == "where" and k == 0) else wants[k])
               for k in range(len(n.inputs))]
        if len(set(wants)) > 1:
            return mixed_compare(n.op, ops, wants)
        k = special_exponent(self.graph, n)
        expr = special_power(k, ops[0], ctype) if k else ELEMWISE[n.op](ops, ctype)
        if is_half(n.dtype) and self.fp16_numpy:   # NumPy rounds every float16 op to half
            halves = np.dtype(ctype) == np.float16 and all(np.dtype(w) == np.float16 for w in wants)
            if n.op in HALF_EXACT_OPS and (halves or n.op == "where"):
                return expr      # half operands (rounded when converted to the loop type) give a half
            rounding = "fl_round_half_arith" if n.op in HALF_ARITH_OPS else "fl_round_half"
            expr = f"{rounding}({unwrap(expr)})"
        return expr


def arange_expr(n: Node, i: str) -> str:
    """Element `i` of np.arange by NumPy's fill rule: a[0] = start and a[1] = start + step
    (both cast to the dtype), then a[i] = a[0] + i * (a[1] - a[0]) computed in the dtype."""
    dt = n.dtype
    a = n.args
    first = np.asarray(a["start"]).astype(dt)
    second = np.asarray(a["start"] + a["step"]).astype(dt)
    if dt.kind == "f":
        work = np.dtype(np.float32 if dt.itemsize <= 4 else np.float64)
        delta = work.type(second.astype(work) - first.astype(work))
        f, s = literal(first, work), literal(second, work)
        expr = f"({f} if {i} == 0 else ({s} if {i} == 1 else {f} + {ctor(work)}({i}) * {literal(delta, work)}))"
        return f"fl_round_half({expr})" if is_half(dt) else expr
    delta = int(second) - int(first)   # unsigned 64-bit arithmetic wraps like NumPy's fill
    return (f"{ctor(dt)}(np.uint64({int(first) % 2 ** 64}) + np.uint64({i}) * "
            f"np.uint64({delta % 2 ** 64}))")
