"""Expression emission shared by every template.

`ValueEmitter.value(node, coords)` returns a C expression for the value of `node` at the
element with coordinates `coords`, appending whatever statements that needs: one `const`
per elementwise op (with the user's source line as a comment), views folded into index
math, constants as literals. Each (node, coordinates) pair is emitted once, so a value used
twice is computed once. Where the data come from is the template's business: it passes a
`load` callback (vector registers, a cached row, or a plain global load).
"""
from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

import numpy as np

from ..ir import Graph, Node, special_exponent
from ..ops import Kind
from . import index as ix
from .model import CodegenError, CodegenOptions
from .types import cast_tag, is_half, literal, register_type, storage_type

Coords = tuple[ix.Affine, ...]
LoadFn = Callable[[int, ix.Affine], str]
HalfLoadFn = Callable[[int, ix.Affine], "str | None"]   # None: not available raw

# float16 ops computed natively in half (PTX add/sub/mul.rn.f16, neg, abs) in "numpy"
# mode. Each is bit-equal to NumPy's float32-compute-then-round: a product of two halves
# is exact in float32, and for + - the double rounding float32 -> half is innocuous
# because 24 >= 2 * 11 + 2 (Figueroa); neg and abs are exact. Native ops skip the two
# conversions per op that otherwise make a float16 chain conversion-bound.
NATIVE_HALF = {"add": "fl_hadd({0}, {1})", "subtract": "fl_hsub({0}, {1})",
               "multiply": "fl_hmul({0}, {1})", "square": "fl_hmul({0}, {0})",
               "negative": "fl_hneg({0})", "absolute": "fl_habs({0})", "positive": "{0}"}


def _reserved() -> frozenset[str]:
    """Identifiers generated code must not shadow: loop variables, C++ keywords, CUDA
    built-ins, and every function the op table's CUDA expressions call (an input named
    `exp` must not hide exp())."""
    from ..ops import OPS
    called = {m for op in OPS.values() if op.cuda for m in re.findall(r"\b([A-Za-z_]\w*)\s*[(<]", op.cuda)}
    cpp = ("auto bool break case char class const constexpr continue default delete do double else enum "
           "extern false float for goto if inline int long namespace new operator private protected public "
           "register return short signed sizeof static struct switch template this true typedef typename "
           "union unsigned using virtual void volatile while asm min max abs threadIdx blockIdx blockDim "
           "gridDim warpSize NULL nullptr friend alignas alignof decltype noexcept explicit mutable typeid "
           "wchar_t char8_t char16_t char32_t export catch throw try static_cast dynamic_cast const_cast "
           "reinterpret_cast thread_local static_assert concept requires consteval constinit co_await co_return "
           "co_yield and or not xor bitand bitor compl and_eq or_eq xor_eq not_eq half").split()
    loops = ("i", "j", "e", "k", "p", "q", "n", "o", "r", "k1", "k2", "row", "col", "col0", "lane", "warp",
             "warps", "first", "active", "part", "tile", "last", "stride", "index_t", "uint2", "uint4", "c", "t",
             "base", "u", "groups", "items",
             # the row and reduction templates' own locals: an input of one of these names would hide them
             "row_base", "slab", "slab_base", "slab_first", "stage_base", "stage_count", "chunk", "il", "stripe",
             "ry", "c0", "tx", "shift", "in_row", "in_run", "re", "rc", "rv",
             # the stencil path's staged stores
             "jw", "warp0", "off",
             # strided_loop's vector index and its group counters (reduction.py)
             "rv", "rv_0", "r_0")
    return frozenset(called) | frozenset(cpp) | frozenset(loops)


class Names:
    """Unique C identifiers for one translation unit."""

    def __init__(self) -> None:
        self.used: set[str] = set(_reserved())

    def fresh(self, base: str) -> str:
        base = sanitize(base)
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name


def sanitize(name: str) -> str:
    # NVRTC takes ASCII identifiers only: a cell's `β` becomes u3b2, other marks _
    name = re.sub(r"[^0-9A-Za-z_]", lambda m: f"u{ord(m.group()):x}" if ord(m.group()) > 127 else "_", name)
    # C++ reserves names with a double underscore (CUDA's __shared__ is a macro: an array
    # of the notebook's named so did not compile) and an underscore before a capital
    name = re.sub(r"__+", "_", name)
    if name.startswith("fl_"):   # the prelude's helpers (fl_vec, fl_add_op, ...): never shadowed
        name = f"v_{name}"
    return name if name and not name[0].isdigit() and not re.match(r"_[A-Z]", name) else f"v{name}" \
        if name.startswith("_") else f"v_{name}"


def comment(node: Node) -> str:
    if node.loc is None:
        return ""
    text = " ".join(node.loc.text.split())
    return f"  // line {node.loc.line}: {text}"


def array_name(graph: Graph, nid: int) -> str:
    """A readable base name for a materialised array: the user's name if it has one."""
    n = graph.nodes[nid]
    if n.op == "input":
        return str(n.args["name"])
    names = graph.names_of(nid)
    return names[0] if names else f"v{nid}"


def load_expr(ptr: str, dtype: np.dtype, offset: str) -> str:
    """Register value of ptr[offset]."""
    return f"fl_from_half({ptr}[{offset}])" if is_half(dtype) else f"{ptr}[{offset}]"


def to_storage(dtype: np.dtype, value: str) -> str:
    return f"fl_to_half({value})" if is_half(dtype) else value


# Integer ops that can overflow where C++ leaves the result undefined (signed 32/64-bit,
# and 16-bit products promoted to int), and every 8-/16-bit one (ptxas mishandles the
# 16-bit arithmetic NVVM narrows them to): rendered with the wrapping helpers of the prelude.
WRAPPING = {"add": "fl_wrap_add({0}, {1})", "subtract": "fl_wrap_sub({0}, {1})",
            "multiply": "fl_wrap_mul({0}, {1})", "square": "fl_wrap_mul({0}, {0})",
            "negative": "fl_wrap_neg({0})"}


# NumPy 2 compares int64 with uint64 exactly (its 'qQ->?' loops); C++ would convert the
# signed operand to unsigned first.
MIXED_SIGN = {"less": "fl_less_mixed({0}, {1})", "less_equal": "!fl_less_mixed({1}, {0})",
              "greater": "fl_less_mixed({1}, {0})", "greater_equal": "!fl_less_mixed({0}, {1})",
              "equal": "fl_equal_mixed({0}, {1})", "not_equal": "!fl_equal_mixed({0}, {1})"}

# x ** k for a constant k (ir.special_exponent says when, and why)
SPECIAL_POWERS = {2: "({0} * {0})", 3: "({0} * {0} * {0})", 4: "(({0} * {0}) * ({0} * {0}))",
                  0.5: "sqrt({0})", -1: "fl_reciprocal({0})"}


def may_overflow_undefined(op: str, dtype: np.dtype) -> bool:
    """Whether C++'s `a op b` in `dtype` can hit undefined behaviour where NumPy wraps."""
    dt = np.dtype(dtype)
    if op not in WRAPPING or dt.kind not in "iu":
        return False
    if dt.itemsize >= 4:
        return dt.kind == "i"
    return True   # 8/16-bit: computed in 32-bit PTX and truncated (see fl_wrap32)


def view_coords(graph: Graph, n: Node, coords: Coords) -> Coords:
    """Coordinates in a view's source of the view's element at `coords` (both backends)."""
    src = graph.nodes[n.inputs[0]]
    a = n.args
    if n.op == "transpose":
        return ix.transpose(coords, a["perm"])
    if n.op == "slice":
        return ix.slice_(coords, a["start"], a["step"])
    if n.op == "reshape":
        return ix.reshape(coords, n.shape, src.shape)
    if n.op == "broadcast_to":
        return ix.broadcast(coords, n.shape, src.shape)
    raise CodegenError(f"unknown view {n.op}")


class ValueEmitter:
    def __init__(self, graph: Graph, nodes: Sequence[int], inputs: Sequence[int],
                 options: CodegenOptions, names: Names, load: LoadFn,
                 fixed: Mapping[int, str] | None = None, index_value: LoadFn | None = None,
                 load_half: HalfLoadFn | None = None, fixed_half: Mapping[int, str] | None = None) -> None:
        self.graph = graph
        self.nodes = frozenset(nodes)
        self.inputs = frozenset(inputs)
        self.options = options
        self.names = names
        self.load = load
        self.fixed: dict[int, str] = dict(fixed or {})
        # float16 values known as their bits (a row kernel's values carried between passes)
        self.fixed_half: dict[int, str] = dict(fixed_half or {})
        self.used_fixed: set[int] = set()     # which fixed values were read
        # values computed from the index alone (arange); None: emit them in place
        self.index_value = index_value
        # the raw float16 bits of an input element, when the template can give them
        self.load_half = load_half
        self.lines: list[tuple[int, str]] = []   # (node id, statement); -1: loads
        self._memo: dict[tuple[int, Coords], str] = {}
        self._half_memo: dict[tuple[int, Coords], str] = {}

    def emit(self, line: str, node: int = -1) -> None:
        self.lines.append((node, line))

    def take_lines(self) -> list[str]:
        """The statements emitted so far, in program order: node ids are topological, so
        sorting by them keeps every definition before its uses (loads come first)."""
        out = [line for _, line in sorted(self.lines, key=lambda t: t[0])]
        self.lines = []
        return out

    # -- values --------------------------------------------------------------
    def value(self, nid: int, coords: Coords) -> str:
        if nid in self.fixed:
            self.used_fixed.add(nid)
            return self.fixed[nid]
        key = (nid, tuple(coords))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        expr = self._value(nid, tuple(coords))
        self._memo[key] = expr
        return expr

    def stored(self, nid: int, coords: Coords) -> str:
        """The value of `nid` as stored in memory (float16: its bits)."""
        if is_half(self.graph.nodes[nid].dtype) and self.options.fp16_math == "numpy":
            return self.half_value(nid, coords)
        return to_storage(self.graph.nodes[nid].dtype, self.value(nid, coords))

    def half_value(self, nid: int, coords: Coords) -> str:
        """The float16 bits (an `fl_half`) of a float16 node, in "numpy" mode where every
        float16 value is a half: computed natively where the op allows, loaded raw, or
        the float value rounded (exactly: it already is a half)."""
        key = (nid, tuple(coords))
        hit = self._half_memo.get(key)
        if hit is not None:
            return hit
        n = self.graph.nodes[nid]
        raw = None
        if nid in self.inputs and self.load_half is not None:
            raw = self.load_half(nid, ix.linearize(coords, n.shape))
        if nid in self.fixed_half:
            self.used_fixed.add(nid)
            expr = self.fixed_half[nid]
        elif nid in self.fixed:
            self.used_fixed.add(nid)
            expr = f"fl_to_half({self.fixed[nid]})"
        elif raw is not None:
            expr = raw
        elif nid in self.inputs or nid not in self.nodes:
            # a kernel input without raw access: its loaded value, rounded (exactly: it is
            # a half). Never recomputed from its producers, which the kernel may not have.
            expr = self.names.fresh(f"v{nid}_h")
            self.emit(f"const fl_half {expr} = fl_to_half({self.value(nid, coords)});", nid)
        elif n.op in ("const", "full") and nid in self.nodes:
            expr = half_literal(n.args["value"], n.dtype)
        elif n.kind is Kind.INJECTIVE and nid in self.nodes:
            expr = self.half_value(n.inputs[0], view_coords(self.graph, n, coords))
        elif self._native_half(n):
            ops = [self._half_operand(n, k, coords) for k in range(len(n.inputs))]
            expr = self.names.fresh(f"v{nid}_h")
            self.emit(f"const fl_half {expr} = {NATIVE_HALF[n.op].format(*ops)};{comment(n)}", nid)
        elif self._half_first(n):
            # computed in float, rounded once: the float value, if wanted, is read back
            expr = self.names.fresh(f"v{nid}_h")
            self.emit(f"const fl_half {expr} = fl_to_half({unwrap(self._elemwise_expr(n, coords))});"
                      f"{comment(n)}", nid)
        else:
            expr = self.names.fresh(f"v{nid}_h")
            self.emit(f"const fl_half {expr} = fl_to_half({self.value(nid, coords)});", nid)
        self._half_memo[key] = expr
        return expr

    def _half_first(self, n: Node) -> bool:
        """A float16 op of a float16 loop in "numpy" mode: its half is its value (the
        float one, where a reader needs it, is converted from the half)."""
        return (n.kind is Kind.ELEMWISE and self.options.fp16_math == "numpy" and is_half(n.dtype)
                and n.op != "astype" and is_half(n.args["ctype"]))

    def _native_half(self, n: Node) -> bool:
        return (n.op in NATIVE_HALF and self._half_first(n)
                and all(is_half(self.graph.nodes[i].dtype) for i in n.inputs))

    def _half_operand(self, n: Node, k: int, coords: Coords) -> str:
        src_id = n.inputs[k]
        src = self.graph.nodes[src_id]
        if src.op in ("const", "full") and src_id not in self.fixed:
            return half_literal(src.args["value"], src.dtype)
        return self.half_value(src_id, ix.broadcast(coords, n.shape, src.shape))

    def _value(self, nid: int, coords: Coords) -> str:
        n = self.graph.nodes[nid]
        if nid in self.inputs:
            return self.load(nid, ix.linearize(coords, n.shape))
        if nid not in self.nodes:
            raise CodegenError(f"%{nid} ({n.op}) is neither computed in this kernel nor one of its inputs")
        if n.op in ("const", "full"):
            return literal(n.args["value"], n.dtype)
        if n.op == "arange":
            return self._arange(nid, n, coords[0])
        if n.kind is Kind.INJECTIVE:
            return self.value(n.inputs[0], view_coords(self.graph, n, coords))
        if self._half_first(n):
            name = self.names.fresh(f"v{nid}")
            if n.op == "absolute" and self._native_half(n) and (nid, tuple(coords)) not in self._half_memo:
                # |x| of a half is a half: the float of its operand's float, exact, where
                # the half's way round (to float, |.|, to half, to float) took 3 conversions
                self.emit(f"const float {name} = fabsf({self.value(n.inputs[0], coords)});{comment(n)}", nid)
            else:
                self.emit(f"const float {name} = fl_from_half({self.half_value(nid, coords)});", nid)
            return name
        if n.kind is Kind.ELEMWISE:
            return self._elemwise(nid, n, coords)
        raise CodegenError(f"%{nid} ({n.op}) cannot be computed element by element here")

    def _operand(self, n: Node, k: int, coords: Coords, ctype: np.dtype) -> str:
        src_id = n.inputs[k]
        src = self.graph.nodes[src_id]
        if src.op in ("const", "full") and src_id not in self.fixed:
            # NumPy's cast of the scalar, done here on the host: a literal of the loop type.
            return literal(np.asarray(src.args["value"], src.dtype).astype(ctype).item(), ctype)
        v = self.value(src_id, ix.broadcast(coords, n.shape, src.shape))
        return v if src.dtype == ctype else f"fl_cast<{cast_tag(ctype)}>({v})"

    def _elemwise_expr(self, n: Node, coords: Coords) -> str:
        """The op's expression over its operands cast to the loop type (not rounded)."""
        ctype = np.dtype(n.args["ctype"])
        wants = n.operand_dtypes
        ops = []
        for k in range(len(n.inputs)):
            # where's condition stays bool; every other operand is cast to its loop type
            want = np.dtype(bool) if (n.op == "where" and k == 0) else wants[k]
            ops.append(self._operand(n, k, coords, want))
        if len(set(wants)) > 1:
            return MIXED_SIGN[n.op].format(*ops)
        if may_overflow_undefined(n.op, ctype):
            return WRAPPING[n.op].format(*ops)
        k = special_exponent(self.graph, n)
        if k:
            return SPECIAL_POWERS[k].format(ops[0])
        if self._half_division(n, ctype):
            return f"fl_hdiv({ops[0]}, {ops[1]})"
        return n.opdef.cuda.format(*ops)

    def _half_division(self, n: Node, ctype: np.dtype) -> bool:
        """A float16 quotient of float16 values, rounded to float16 next ("numpy" mode):
        fl_hdiv gives IEEE division's half at half its cost."""
        if n.op != "true_divide" or not (is_half(ctype) and is_half(n.dtype)) or self.options.fp16_math != "numpy":
            return False
        return all(is_half(self.graph.nodes[i].dtype) for i in n.inputs)

    def _elemwise(self, nid: int, n: Node, coords: Coords) -> str:
        if n.op == "astype":
            expr = n.opdef.cuda.format(self.value(n.inputs[0], coords), T=cast_tag(n.dtype))
        else:
            expr = self._elemwise_expr(n, coords)
            if is_half(n.dtype) and self.options.fp16_math == "numpy":
                expr = f"fl_cast<fl_half>({unwrap(expr)})"  # NumPy rounds every float16 op to half
        name = self.names.fresh(f"v{nid}")
        self.emit(f"const {register_type(n.dtype)} {name} = {unwrap(expr)};{comment(n)}", nid)
        return name

    def _arange(self, nid: int, n: Node, idx: ix.Affine) -> str:
        if self.index_value is not None:
            return self.index_value(nid, idx)
        name = self.names.fresh(f"v{nid}")
        self.emit(f"const {register_type(n.dtype)} {name} = {arange_expr(n, ix.render(idx))};{comment(n)}", nid)
        return name


def arange_expr(n: Node, i: str) -> str:
    """Element `i` of np.arange, by NumPy's fill rule: a[0] = start and a[1] = start + step
    (both cast to the dtype), then a[i] = a[0] + i * (a[1] - a[0]) computed in the dtype."""
    dt = n.dtype
    a = n.args
    first = np.asarray(a["start"]).astype(dt)
    second = np.asarray(a["start"] + a["step"]).astype(dt)
    if dt.kind == "f":
        work = np.float32 if dt.itemsize <= 4 else np.float64
        delta = work(second.astype(work) - first.astype(work))
        rt = "float" if work is np.float32 else "double"
        expr = (f"({i}) == 0 ? {literal(first, work)} : ({i}) == 1 ? {literal(second, work)} : "
                f"{literal(first, work)} + {rt}({i}) * {literal(delta, work)}")
        return f"fl_cast<fl_half>({expr})" if is_half(dt) else f"({expr})"
    # unsigned 64-bit arithmetic wraps like NumPy's fill, then narrows to the dtype
    delta = int(second) - int(first)
    return (f"static_cast<{storage_type(dt)}>({int(first) % 2 ** 64}ULL + "
            f"static_cast<unsigned long long>({i}) * {delta % 2 ** 64}ULL)")


def half_literal(value: object, dtype: np.dtype) -> str:
    """A float16 constant as its bits, cast as NumPy casts the scalar (see _operand)."""
    bits = int(np.asarray(value, dtype).astype(np.float16).view(np.uint16))
    return f"fl_half_bits(0x{bits:04x}u)"


def unwrap(expr: str) -> str:
    """`(a + b)` -> `a + b` when the outer parentheses enclose the whole expression."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return expr
    depth = 0
    for k, ch in enumerate(expr):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and k < len(expr) - 1:
            return expr
    return expr[1:-1]


def indent(lines: Sequence[str], depth: int) -> list[str]:
    pad = "    " * depth
    return [pad + line if line else line for line in lines]
