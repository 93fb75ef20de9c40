"""The element function: a kernel's fused elementwise work for one element, as a
`__device__` function from loaded input elements to computed values.

Pointwise and reduction kernels share it. Keeping the arithmetic in one function lets a
kernel call it from a vector loop (16-byte accesses), a scalar tail and a strided loop
without writing the ops three times, and lets a reader see the fused computation apart
from the data movement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from . import index as ix
from .context import KernelContext
from .emit import ValueEmitter, arange_expr, array_name, indent
from .types import is_half, register_type, storage_type


@dataclass
class Load:
    """An input of the element function: an array element (`offset` into the node's
    array) or, for arange, a value computed from the index (`offset` is the index)."""

    node: int
    offset: ix.Affine
    param: str          # the element function's parameter
    access: str = ""    # "vector", "uniform" (one value for the whole vector), "shiftK", "gather" or "" (scalar)
    from_index: bool = False
    gathered: ix.Affine | None = None   # "gather": the offset of element e of the vector

    def ctype(self, graph) -> str:
        dt = graph.nodes[self.node].dtype
        return register_type(dt) if self.from_index else storage_type(dt)

    def scalar(self, ctx: KernelContext, offset: ix.Affine | None = None) -> str:
        """The element at `offset` (default: the load's own)."""
        at = ix.render(self.offset if offset is None else offset)
        if self.from_index:
            return arange_expr(ctx.graph.nodes[self.node], at)
        return f"{ctx.in_ptr[self.node]}[{at}]"


@dataclass
class ElementFunction:
    name: str
    lines: list[str]
    loads: list[Load]
    stored: dict[int, str] = field(default_factory=dict)     # node -> out param (storage type)
    computed: dict[int, str] = field(default_factory=dict)   # node -> out param (register type)


def build(ctx: KernelContext, coords: Sequence[ix.Affine], stored: Sequence[int],
          computed: Sequence[int] = (), what: str = "", name: str = "", own: bool = False) -> ElementFunction:
    """The element function computing `stored` nodes (written to memory, storage types)
    and `computed` nodes (handed back to the kernel, register types) at `coords`, which
    are coordinates in the kernel's iteration space (every stored and computed node has
    that shape). Nodes the kernel keeps in tables (ctx.tables) are read from them, unless
    `own`: the function that fills a table computes them."""
    g = ctx.graph
    nodes, inputs = ctx.kernel.nodes, ctx.kernel.inputs
    if ctx.tables and not own:
        nodes = [n for n in nodes if n not in ctx.tables]
        inputs = [*inputs, *ctx.tables]
    loads: dict[tuple[int, ix.Affine], Load] = {}
    converted: dict[tuple[int, ix.Affine], str] = {}

    def load_raw(nid: int, offset: ix.Affine) -> str:
        """The parameter holding the element as stored (float16: its bits)."""
        key = (nid, offset)
        if key not in loads:
            base = array_name(g, nid)
            loads[key] = Load(nid, offset, ctx.names.fresh(f"{base}_h" if is_half(g.nodes[nid].dtype) else base))
        return loads[key].param

    def load(nid: int, offset: ix.Affine) -> str:
        param = load_raw(nid, offset)
        key = (nid, offset)
        if is_half(g.nodes[nid].dtype) and key not in converted:  # convert once, at the top
            converted[key] = ctx.names.fresh(array_name(g, nid))
            em.emit(f"const float {converted[key]} = fl_from_half({param});")
        return converted.get(key, param)

    def from_index(nid: int, idx: ix.Affine) -> str:
        key = (nid, idx)
        if key not in loads:
            loads[key] = Load(nid, idx, ctx.names.fresh(f"v{nid}"), from_index=True)
        return loads[key].param

    em = ValueEmitter(g, nodes, inputs, ctx.options, ctx.names, load, index_value=from_index, load_half=load_raw)
    out_stored = {o: ctx.names.fresh(array_name(g, o)) for o in stored}
    out_computed = {c: ctx.names.fresh(f"v{c}_out") for c in computed}
    tail = []
    for o in stored:
        tail.append(f"{out_stored[o]} = {em.stored(o, coords)};")
    for c in computed:
        v = em.value(c, coords)
        tail.append(f"{out_computed[c]} = {v};")
    name = name or f"{ctx.name}_element"
    args = [f"const {l.ctype(g)} {l.param}" for l in loads.values()]
    args += [f"{storage_type(g.nodes[o].dtype)}& {p}" for o, p in out_stored.items()]
    args += [f"{register_type(g.nodes[c].dtype)}& {p}" for c, p in out_computed.items()]
    lines = [f"// One element of {ctx.name}{what}: the fused ops in program order.",
             f"__device__ __forceinline__ void {name}({', '.join(args)}) {{",
             *indent(em.take_lines() + tail, 1), "}"]
    return ElementFunction(name, lines, list(loads.values()), out_stored, out_computed)


def access(offset: ix.Affine, sym: ix.Var, width: int) -> str | None:
    """How a load behaves across `width` consecutive values of loop variable `sym`,
    starting at a multiple of `width`: "vector" (its offset advances by one and is
    aligned to `width` elements), "uniform" (its offset does not move), or None
    (anything else: a transpose, an unaligned slice...)."""
    step = 0
    aligned = offset.const % width == 0
    base = ix.Affine.of(sym)
    for s, c in offset.terms:
        if s == sym:
            step += c
        elif isinstance(s, ix.DivMod) and s.base == base:
            if s.div % width == 0:
                aligned &= c % width == 0          # fixed across the vector
            elif s.div == 1 and (s.mod is None or s.mod % width == 0):
                step += c                          # sym % m advances with sym
            else:
                return None
        elif sym in (s.base.symbols() if isinstance(s, ix.DivMod) else {s}):
            return None
        else:
            aligned &= c % width == 0              # another loop variable: fixed
    if step == 0:
        return "uniform"
    if step == 1 and aligned:
        return "vector"
    if step == 1 and offset.coef(sym) == 1 and all(s == sym or c % width == 0 for s, c in offset.terms):
        return f"shift{offset.const % width}"     # aligned but for a constant: x[1:], x[3:-1]
    return None


def shifted_groups(offset: ix.Affine, sym: ix.Var, width: int, size: int) -> int:
    """How many leading vectors of `sym` (0, 1, ... below extent // width) a shifted load
    can read as two aligned vectors around its elements without leaving its array of
    `size` elements; the rest go element by element."""
    shift = offset.const % width
    rest = ix.Affine(offset.const, tuple((s, c) for s, c in offset.terms if s != sym))
    fit = (size - 2 * width - rest.bounds()[1] + shift) // width + 1
    return max(0, min(fit, sym.extent // width))


def vector_groups(ctx: KernelContext, loads: Sequence[Load], sym: ix.Var, width: int) -> int:
    """The vectors of `sym` every load can take whole (all of them but for shifted loads
    near the end of their array)."""
    return min([sym.extent // width] + [shifted_groups(l.offset, sym, width, ctx.graph.nodes[l.node].aval.size)
                                        for l in loads if l.access.startswith("shift")])


def vector_width(ctx: KernelContext, loads: Sequence[Load], stored: Sequence[int], sym: ix.Var,
                 stored_offsets: Sequence[ix.Affine] = (), max_width: int = 16, shifts: bool = False,
                 gather_max: int = 0, whole: bool = False) -> int:
    """The widest vector (16 bytes of the widest type) every load and store can follow
    along `sym`; 1 when some access cannot. Marks each load's access. With `shifts`,
    loads off by a constant (shifted slices of a stencil) read two aligned vectors and
    pick their elements, where at least half the vectors keep the two inside the array
    (vector_groups: how many); and an access that a vector cannot follow is tried with
    narrower ones: rows of 4316 halves start 8 bytes off a 16-byte boundary, so their
    loads take 8-byte vectors (the strided path's 2-byte ones ran a float16 broadcast at
    54% of copy on the H200); a reduction over runs of 33540 halves reads 8-byte vectors,
    not single halves. With `whole`, the width also divides `sym`'s extent (loops that
    take whole vectors only). A load no vector can follow, of an array of at most
    `gather_max` elements, is read element by element at its own offset ("gather") while
    the rest move as vectors: a broadcast operand whose runs are no multiple of the vector
    (the (n, 1, 33) max of a softmax over axis 1 of (n, 1000, 33)) no longer sends every
    load and store down the 2-byte strided path. Only small arrays, read again and again
    from cache: a large one gathered (a transpose, a strided slice) would spread each
    warp's load over `width` times the lines of an element-per-thread loop."""
    g = ctx.graph
    sizes = [g.nodes[n].dtype.itemsize for n in stored] + [g.nodes[l.node].dtype.itemsize for l in loads]
    if not sizes:
        return 1
    width = min(16 // max(sizes), max_width)
    while width >= 2:   # narrower vectors where a shifted load's wider pair would leave the array
        if whole and sym.extent % width:
            width //= 2
            continue
        kinds = [("uniform" if sym not in l.offset.symbols() else None) if l.from_index
                 else access(l.offset, sym, width) for l in loads]
        kinds = ["gather" if k is None and gather_max and (l.from_index or g.nodes[l.node].aval.size <= gather_max)
                 else k for k, l in zip(kinds, loads)]
        for k, l in enumerate(loads):
            if (kinds[k] or "").startswith("shift") and not (
                    shifts and shifted_groups(l.offset, sym, width, g.nodes[l.node].aval.size) * 2 >= sym.extent // width):
                kinds[k] = "narrower"
        if any(k is None for k in kinds) or any(access(o, sym, width) != "vector" for o in stored_offsets):
            kinds = ["narrower"]
        if "narrower" not in kinds:
            element_at = ix.Var(f"({sym.name} + e)", sym.extent)
            for l, k in zip(loads, kinds):
                l.access = k  # type: ignore[assignment]
                l.gathered = ix.rename(l.offset, sym, element_at) if k == "gather" else None
            return width
        width //= 2
    return 1


@dataclass(frozen=True)
class Decl:
    """`const ctype name = expr;`: one input of an element call, read before the call
    (`nbytes` read from memory; 0 for a value computed from the index)."""

    ctype: str
    name: str
    expr: str
    nbytes: int = 0

    def __str__(self) -> str:
        return f"const {self.ctype} {self.name} = {self.expr};"


def vector_load_decls(ctx: KernelContext, fn: ElementFunction, width: int) -> tuple[list[Decl], list[str]]:
    """The reads of this vector's inputs, and the element call's input arguments (which
    use the loop variable `e` for the element within the vector)."""
    g = ctx.graph
    decls, args = [], []
    for l in fn.loads:
        st = storage_type(g.nodes[l.node].dtype)
        size = g.nodes[l.node].dtype.itemsize
        off = ix.render(l.offset)
        if l.access == "gather":   # element by element, in the call (see vector_width)
            args.append(l.scalar(ctx, l.gathered))
            continue
        if l.from_index:
            decls.append(Decl(l.ctype(g), l.param, l.scalar(ctx)))
            args.append(l.param)
            continue
        ptr = ctx.in_ptr[l.node]
        if l.node in ctx.tables and l.access != "uniform":   # shared memory: no __ldg vectors
            args.append(l.scalar(ctx, l.gathered) if l.access == "gather" else f"{ptr}[{off} + e]")
            continue
        if l.access == "vector":
            decls.append(Decl(f"fl_vec<{st}, {width}>", l.param, f"fl_load_vec<{width}>({ptr} + {off})", size * width))
            args.append(f"{l.param}.v[e]")
        elif l.access.startswith("shift"):
            shift = int(l.access[5:])
            decls.append(Decl(f"fl_vec<{st}, {width}>", l.param,
                              f"fl_load_vec_shift<{width}, {shift}>({ptr} + {ix.render(l.offset + (-shift))})",
                              2 * size * width))
            args.append(f"{l.param}.v[e]")
        else:
            decls.append(Decl(st, l.param, f"{ptr}[{off}]", size))
            args.append(l.param)
    return decls, args


def vector_loads(ctx: KernelContext, fn: ElementFunction, width: int) -> tuple[list[str], list[str]]:
    """As vector_load_decls, the declarations as lines."""
    decls, args = vector_load_decls(ctx, fn, width)
    return [str(d) for d in decls], args


def scalar_load_decls(ctx: KernelContext, fn: ElementFunction) -> tuple[list[Decl], list[str]]:
    """The reads of one element's inputs, and the element call's input arguments."""
    decls = [Decl(l.ctype(ctx.graph), l.param, l.scalar(ctx), 0 if l.from_index else ctx.graph.nodes[l.node].dtype.itemsize)
             for l in fn.loads]
    return decls, [d.name for d in decls]


def scalar_args(ctx: KernelContext, fn: ElementFunction) -> list[str]:
    return [l.scalar(ctx) for l in fn.loads]
