"""The IR: immutable nodes in a graph, a builder that infers abstract values, printing
and `verify()`.

A node's id is its index in `Graph.nodes`, which is always in topological order, so
every pass can walk the tuple front to back and use ids as bit positions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .ops import (ARG_REDUCE_OPS, OPS, Args, Aval, Kind, OpaqueFn, ShapeError, broadcast_shapes,
                  normalize_axes, op, reduce_dtype, reduce_shape, short_dtype, ufunc_loop_dtypes)


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's cell an op was written (1-based line of the cell)."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text.strip()}"


@dataclass(frozen=True)
class Node:
    op: str
    inputs: tuple[int, ...]
    args: Args
    aval: Aval
    loc: SourceLoc | None = field(default=None, compare=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def kind(self) -> Kind:
        return OPS[self.op].kind

    @property
    def opdef(self):
        return OPS[self.op]

    @property
    def loop_dtype(self) -> np.dtype:
        """The dtype the op computes in: an elementwise op's loop type, else its own."""
        return np.dtype(self.args["ctype"]) if "ctype" in self.args else self.dtype

    @property
    def operand_dtypes(self) -> tuple[np.dtype, ...]:
        """The dtype each operand is cast to before the op: the loop's input types. They
        differ only in NumPy 2's exact mixed-sign comparisons (int64 < uint64)."""
        if "in_dtypes" in self.args:
            return tuple(np.dtype(d) for d in self.args["in_dtypes"])
        return (self.loop_dtype,) * len(self.inputs)

    @property
    def label(self) -> str:
        """Short display name: the op, or the opaque function's name, or the input name."""
        if self.op == "input":
            return str(self.args["name"])
        if self.op == "opaque":
            return self.args["fn"].name
        return self.op


@dataclass(frozen=True)
class GraphBreak:
    """A point of the trace where Python needed a concrete value (`if x.sum() > 0:`,
    `print(y)`, a shape that depends on the data): everything traced before it had to run
    and the device had to finish, before the cell could go on.

    Nodes with ids below `first` were traced before the break; `node` is the value Python
    needed (None when nothing in the final graph reads it any more); `reason` says what
    Python needed it for, in the user's terms."""

    first: int
    node: int | None
    reason: str
    loc: SourceLoc | None = None

    def __str__(self) -> str:
        where = f" (line {self.loc.line}: {self.loc.text.strip()})" if self.loc is not None else ""
        return f"graph break: {self.reason}{where}"


@dataclass(frozen=True)
class Graph:
    """A traced cell: nodes in topological order, the named outputs, and the graph
    breaks that split the trace into stages (stage k runs, and the device finishes,
    before anything of stage k+1)."""

    nodes: tuple[Node, ...]
    outputs: tuple[tuple[str, int], ...]
    source: str = field(default="", compare=False)
    breaks: tuple[GraphBreak, ...] = ()

    def stage(self, i: int) -> int:
        """The stage of node i: how many graph breaks came before it was traced."""
        return sum(1 for b in self.breaks if b.first <= i)

    @cached_property
    def stages(self) -> tuple[int, ...]:
        """stage(i) for every node."""
        out, k = [], 0
        firsts = sorted(b.first for b in self.breaks)
        for i in range(len(self.nodes)):
            while k < len(firsts) and firsts[k] <= i:
                k += 1
            out.append(k)
        return tuple(out)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i: int) -> Node:
        return self.nodes[i]

    @cached_property
    def users(self) -> tuple[tuple[int, ...], ...]:
        """users[i]: ids of the nodes that read node i (each once, ascending)."""
        acc: list[list[int]] = [[] for _ in self.nodes]
        for j, n in enumerate(self.nodes):
            for i in dict.fromkeys(n.inputs):
                acc[i].append(j)
        return tuple(tuple(u) for u in acc)

    @cached_property
    def output_ids(self) -> frozenset[int]:
        return frozenset(i for _, i in self.outputs)

    @cached_property
    def input_ids(self) -> tuple[int, ...]:
        return tuple(i for i, n in enumerate(self.nodes) if n.op == "input")

    def input_names(self) -> tuple[str, ...]:
        return tuple(self.nodes[i].args["name"] for i in self.input_ids)

    def names_of(self, i: int) -> tuple[str, ...]:
        """The cell's variable names bound to node i at the end of the cell."""
        return tuple(name for name, j in self.outputs if j == i)

    def __str__(self) -> str:
        return format_graph(self)


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------

def format_value(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, np.dtype):
        return short_dtype(v)
    if isinstance(v, tuple):
        return "(" + ",".join(format_value(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def format_args(node: Node) -> str:
    parts = []
    for k, v in node.args.items():
        if k in ("name", "fn", "value"):
            continue
        if k in ("ctype", "dtype") and node.op != "astype" and np.dtype(v) == node.dtype:
            continue  # a compute dtype is worth showing only when it differs
        if k == "flat":
            if v:
                parts.append("flat")
            continue
        if k == "keepdims":
            if v:
                parts.append("keepdims")
            continue
        if k == "kwargs":
            parts.extend(f"{kk}={format_value(vv)}" for kk, vv in v)
            continue
        parts.append(f"{k}={format_value(v)}")
    return " ".join(parts)


def format_node(graph: Graph, i: int) -> str:
    n = graph.nodes[i]
    if n.op == "input":
        head = f"input {n.args['name']}"
    elif n.op == "const":
        head = f"const {format_value(n.args['value'])}"
    elif n.op == "full":
        head = f"full {format_value(n.args['value'])}"
    else:
        head = n.label
        if n.inputs:
            head += " " + ", ".join(f"%{j}" for j in n.inputs)
    extra = format_args(n)
    text = f"%{i} = {head}{' ' + extra if extra else ''} : {n.aval}"
    names = graph.names_of(i)
    if names:
        text += f"  -> {', '.join(names)}"
    return text


def format_graph(graph: Graph, with_lines: bool = True) -> str:
    rows = [format_node(graph, i) for i in range(len(graph.nodes))]
    width = max((len(r) for r in rows), default=0)
    out = []
    for i, (r, n) in enumerate(zip(rows, graph.nodes)):
        out.extend(f"--- {b}" for b in graph.breaks if b.first == i)
        out.append(f"{r:<{width}}  # {n.loc}" if with_lines and n.loc is not None else r)
    out.extend(f"--- {b}" for b in graph.breaks if b.first >= len(graph.nodes))
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Building: inference of abstract values, hash-consing of identical nodes
# ---------------------------------------------------------------------------

class GraphBuilder:
    """Appends nodes, inferring each node's shape and dtype from the op table rules.

    Identical pure nodes (same op, inputs and args) are shared (common subexpressions).
    """

    def __init__(self, source: str = "") -> None:
        self.nodes: list[Node] = []
        self._memo: dict[tuple, int] = {}
        self.on_shared: Callable[[int], None] | None = None   # told when an op gives an existing node
        self.source = source
        self.breaks: list[GraphBreak] = []

    def graph_break(self, node: int | None, reason: str, loc: SourceLoc | None = None) -> GraphBreak:
        """Record that Python needed the value of `node` here: what is traced from now on
        belongs to the next stage."""
        b = GraphBreak(len(self.nodes), node, reason, loc)
        self.breaks.append(b)
        return b

    def aval(self, i: int) -> Aval:
        return self.nodes[i].aval

    def _append(self, opname: str, inputs: Sequence[int], args: Args, aval: Aval,
                loc: SourceLoc | None, share: bool = True) -> int:
        key = (opname, tuple(inputs), args, aval) if share else None
        if key is not None:
            try:
                hit = self._memo.get(key)
            except TypeError:  # unhashable argument: never shared
                hit, key = None, None
            if hit is not None:
                if self.on_shared is not None:
                    self.on_shared(hit)
                return hit
        self.nodes.append(Node(opname, tuple(inputs), args, aval, loc))
        idx = len(self.nodes) - 1
        if key is not None:
            self._memo[key] = idx
        return idx

    # -- sources -----------------------------------------------------------
    def input(self, name: str, shape: Sequence[int], dtype: Any, loc: SourceLoc | None = None) -> int:
        return self._append("input", (), Args.of(name=name), Aval(tuple(shape), np.dtype(dtype)),
                            loc, share=False)

    def const(self, value: Any, dtype: Any, loc: SourceLoc | None = None) -> int:
        dt = np.dtype(dtype)
        v = np.asarray(value).astype(dt).item()  # canonical Python value of that dtype
        return self._append("const", (), Args.of(value=v), Aval((), dt), loc)

    def full(self, shape: Sequence[int], value: Any, dtype: Any, loc: SourceLoc | None = None) -> int:
        dt = np.dtype(dtype)
        v = np.asarray(value).astype(dt).item()
        return self._append("full", (), Args.of(value=v), Aval(tuple(int(d) for d in shape), dt), loc)

    def arange(self, start: Any, stop: Any, step: Any, dtype: Any,
               loc: SourceLoc | None = None) -> int:
        """Values start + i*step for i < ceil((stop - start) / step), as np.arange."""
        if step == 0:
            raise ShapeError("arange: step must not be zero")
        length = max(0, math.ceil((stop - start) / step))
        return self._append("arange", (), Args.of(start=start, stop=stop, step=step),
                            Aval((int(length),), np.dtype(dtype)), loc)

    # -- elementwise -------------------------------------------------------
    def elemwise(self, opname: str, inputs: Sequence[int], loc: SourceLoc | None = None) -> int:
        d = op(opname)
        if d.kind is not Kind.ELEMWISE or opname in ("where", "astype"):
            raise ValueError(f"{opname} is not a ufunc op")
        avals = [self.aval(i) for i in inputs]
        if d.arity is not None and len(avals) != d.arity:
            raise ShapeError(f"{opname} takes {d.arity} operands, got {len(avals)}")
        loop = ufunc_loop_dtypes(d.xp_name, [a.dtype for a in avals])
        shape = broadcast_shapes(*(a.shape for a in avals))
        if opname == "power" and np.dtype(loop[0]).kind in "iu":
            e = self.nodes[inputs[1]]
            if e.op in ("const", "full") and np.any(np.asarray(e.args["value"]) < 0) and math.prod(shape) > 0:
                # NumPy raises this at run time (in its loop: an empty result raises
                # nothing); a kernel cannot, so refuse it while tracing
                raise ValueError("Integers to negative integer powers are not allowed. "
                                 "Use a float base (x.astype(float) ** -1) or a non-negative exponent.")
        args = Args.of(ctype=loop[0]) if len(set(loop[:-1])) == 1 else \
            Args.of(ctype=loop[0], in_dtypes=tuple(loop[:-1]))
        return self._append(opname, inputs, args, Aval(shape, loop[-1]), loc)

    def where(self, cond: int, x: int, y: int, loc: SourceLoc | None = None) -> int:
        cond = self.astype(cond, bool, loc) if self.aval(cond).dtype != np.bool_ else cond
        dt = np.result_type(self.aval(x).dtype, self.aval(y).dtype)
        shape = broadcast_shapes(self.aval(cond).shape, self.aval(x).shape, self.aval(y).shape)
        return self._append("where", (cond, x, y), Args.of(ctype=dt), Aval(shape, dt), loc)

    def astype(self, x: int, dtype: Any, loc: SourceLoc | None = None) -> int:
        dt = np.dtype(dtype)
        if self.aval(x).dtype == dt:
            return x
        if self.nodes[x].op == "const":  # fold: casting a scalar constant is free
            return self.const(np.asarray(self.nodes[x].args["value"], self.aval(x).dtype).astype(dt), dt, loc)
        return self._append("astype", (x,), Args.of(dtype=dt), Aval(self.aval(x).shape, dt), loc)

    # -- views -------------------------------------------------------------
    def transpose(self, x: int, perm: Sequence[int], loc: SourceLoc | None = None) -> int:
        a = self.aval(x)
        perm = tuple(int(p) for p in perm)
        if sorted(perm) != list(range(a.ndim)):
            raise ShapeError(f"axes {perm} don't match array of dimension {a.ndim}")
        if perm == tuple(range(a.ndim)):
            return x
        return self._append("transpose", (x,), Args.of(perm=perm),
                            Aval(tuple(a.shape[p] for p in perm), a.dtype), loc)

    def slice(self, x: int, starts: Sequence[int], steps: Sequence[int], lengths: Sequence[int],
              loc: SourceLoc | None = None) -> int:
        a = self.aval(x)
        starts, steps, lengths = (tuple(int(v) for v in t) for t in (starts, steps, lengths))
        if len(starts) != a.ndim or len(steps) != a.ndim or len(lengths) != a.ndim:
            raise ShapeError("slice needs one start, step and length per dimension")
        if starts == (0,) * a.ndim and steps == (1,) * a.ndim and lengths == a.shape:
            return x
        for s, st, n, dim in zip(starts, steps, lengths, a.shape):
            if n and not (0 <= s < dim and 0 <= s + (n - 1) * st < dim):
                raise ShapeError(f"slice start {s} step {st} length {n} is outside a dimension of {dim}")
        return self._append("slice", (x,), Args.of(start=starts, step=steps), Aval(lengths, a.dtype), loc)

    def reshape(self, x: int, shape: Sequence[int], loc: SourceLoc | None = None) -> int:
        a = self.aval(x)
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != a.size:
            raise ShapeError(f"cannot reshape array of size {a.size} into shape {shape}")
        if shape == a.shape:
            return x
        src = self.nodes[x]
        if src.op == "reshape":  # a reshape of a reshape is one reshape
            x = src.inputs[0]
            if self.aval(x).shape == shape:
                return x
        return self._append("reshape", (x,), Args.of(shape=shape), Aval(shape, a.dtype), loc)

    def broadcast_to(self, x: int, shape: Sequence[int], loc: SourceLoc | None = None) -> int:
        a = self.aval(x)
        shape = tuple(int(d) for d in shape)
        if broadcast_shapes(a.shape, shape) != shape:
            raise ShapeError(f"cannot broadcast an array of shape {a.shape} to {shape}")
        if shape == a.shape:
            return x
        return self._append("broadcast_to", (x,), Args.of(shape=shape), Aval(shape, a.dtype), loc)

    # -- reductions --------------------------------------------------------
    def reduce(self, opname: str, x: int, axis: Any = None, keepdims: bool = False,
               dtype: Any = None, loc: SourceLoc | None = None, ddof: int = 0) -> int:
        d = op(opname)
        if d.kind is not Kind.REDUCE:
            raise ValueError(f"{opname} is not a reduction")
        a = self.aval(x)
        axes = normalize_axes(axis, a.ndim)
        if opname in ARG_REDUCE_OPS and axis is not None and len(axes) != 1:
            raise ShapeError(f"{opname} takes a single axis or None")
        empty = any(a.shape[i] == 0 for i in axes) or (a.size == 0 and not axes)
        if d.identity is None and empty:
            raise ShapeError(f"zero-size array to reduction operation {opname} which has no identity")
        out_dt = reduce_dtype(opname, a.dtype, np.dtype(dtype) if dtype is not None else None)
        if opname in ARG_REDUCE_OPS and axis is None:
            shape: tuple[int, ...] = (1,) * a.ndim if keepdims else ()
        else:
            shape = reduce_shape(a.shape, axes, keepdims)
        args = Args.of(axes=axes, keepdims=bool(keepdims), dtype=out_dt, flat=opname in ARG_REDUCE_OPS and axis is None)
        if opname == "var":
            if out_dt.kind != "f":
                raise ValueError("var reduces to a floating-point dtype")
            args = Args.of(**dict(args), ddof=int(ddof))
        return self._append(opname, (x,), args, Aval(shape, out_dt), loc)

    # -- opaque ------------------------------------------------------------
    def opaque(self, fn: OpaqueFn, inputs: Sequence[int], aval: Aval,
               kwargs: tuple[tuple[str, Any], ...] = (), loc: SourceLoc | None = None,
               output_index: int | None = None) -> int:
        args = Args.of(fn=fn, kwargs=kwargs) if output_index is None else \
            Args.of(fn=fn, kwargs=kwargs, index=output_index)
        return self._append("opaque", inputs, args, aval, loc, share=False)

    def build(self, outputs: Iterable[tuple[str, int]]) -> Graph:
        return prune(Graph(tuple(self.nodes), tuple(outputs), self.source, tuple(self.breaks)))


# Float powers by a few constants are computed without pow. 2, 3, 4 as products (x*x*x):
# CUDA's powf costs some 130 add-equivalents per element: x**3 in a tanh-GELU ran at 61% of
# an H200's copy bandwidth (214 us against 131 us as x*x*x, 2^26 floats, 2026-11-30). The
# products are as accurate (two roundings at most; CUDA's powf is within 2 ulp, and differs
# from glibc's anyway) and agree with pow on zeros, infinities and NaN. 0.5 and -1 as a
# square root and a division, which round correctly as glibc's pow and NumPy's SIMD loops
# do and CUDA's pow does not: 121 ** 0.5 gave 10.999999999999998 on an H200 (fuzzer,
# 2026-12-01), and int(...) of it 10. At -0.0 and -inf a square root gives -0.0 and NaN,
# as NumPy's power(x, 0.5) does on contiguous float32/float64 arrays (its float16 and
# strided loops call pow: +0.0 and +inf); the README lists this difference.
PRODUCT_EXPONENTS = (2, 3, 4)
SPECIAL_EXPONENTS = (*PRODUCT_EXPONENTS, 0.5, -1)


def special_exponent(graph: Graph, node: Node) -> float:
    """The constant exponent (2, 3, 4, 0.5 or -1) of a floating-point power, else 0."""
    if node.op != "power":
        return 0
    e = graph.nodes[node.inputs[1]]
    if node.loop_dtype.kind != "f" or e.op != "const":
        return 0
    v = e.args["value"]
    return v if v in SPECIAL_EXPONENTS else 0


def prune(graph: Graph) -> Graph:
    """Drop nodes no output depends on, and renumber (keeps topological order)."""
    live = set(graph.output_ids)
    for i in range(len(graph.nodes) - 1, -1, -1):
        if i in live:
            live.update(graph.nodes[i].inputs)
    keep = sorted(live)
    if len(keep) == len(graph.nodes):
        return graph
    new_id = {old: new for new, old in enumerate(keep)}
    nodes = tuple(replace(graph.nodes[i], inputs=tuple(new_id[j] for j in graph.nodes[i].inputs))
                  for i in keep)
    # a break now separates the first kept node traced after it from those before
    breaks = tuple(replace(b, first=sum(1 for i in keep if i < b.first), node=new_id.get(b.node))
                   for b in graph.breaks)
    return Graph(nodes, tuple((name, new_id[i]) for name, i in graph.outputs), graph.source, breaks)


# ---------------------------------------------------------------------------
# verify()
# ---------------------------------------------------------------------------

class VerifyError(AssertionError):
    pass


def verify(graph: Graph) -> None:
    """Check topological order, arities, and that every stored shape/dtype is what the
    op table's rules give. Raises VerifyError naming the node."""
    b = GraphBuilder()
    b._memo = {}  # re-derive each node without sharing

    for i, n in enumerate(graph.nodes):
        where = f"%{i} ({n.op})"
        if n.op not in OPS:
            raise VerifyError(f"{where}: unknown op")
        for j in n.inputs:
            if not 0 <= j < i:
                raise VerifyError(f"{where}: input %{j} is not defined before it")
        d = OPS[n.op]
        if d.arity is not None and len(n.inputs) != d.arity:
            raise VerifyError(f"{where}: takes {d.arity} inputs, has {len(n.inputs)}")
        b.nodes = list(graph.nodes[:i])
        b._memo = {}
        expected = _reinfer(b, n)
        if expected is not None and expected != n.aval:
            raise VerifyError(f"{where}: stored {n.aval} but the rules give {expected}")
    for name, j in graph.outputs:
        if not 0 <= j < len(graph.nodes):
            raise VerifyError(f"output {name!r} names a missing node %{j}")
    last = 0
    for b in graph.breaks:
        if not last <= b.first <= len(graph.nodes):
            raise VerifyError(f"{b}: its position %{b.first} is out of order")
        if b.node is not None and not 0 <= b.node < b.first:
            raise VerifyError(f"{b}: the value it needed, %{b.node}, was not traced before it")
        last = b.first


def _reinfer(b: GraphBuilder, n: Node) -> Aval | None:
    a = n.args
    if n.kind is Kind.SOURCE or n.kind is Kind.OPAQUE:
        return None
    if n.op == "where":
        idx = b.where(*n.inputs)
    elif n.op == "astype":
        idx = b._append("astype", n.inputs, a, Aval(b.aval(n.inputs[0]).shape, a["dtype"]), None, False)
    elif n.kind is Kind.ELEMWISE:
        idx = b.elemwise(n.op, n.inputs)
    elif n.op == "transpose":
        idx = b.transpose(n.inputs[0], a["perm"])
    elif n.op == "slice":
        idx = b.slice(n.inputs[0], a["start"], a["step"], n.shape)
    elif n.op == "reshape":
        idx = b.reshape(n.inputs[0], a["shape"])
    elif n.op == "broadcast_to":
        idx = b.broadcast_to(n.inputs[0], a["shape"])
    elif n.kind is Kind.REDUCE:
        idx = b.reduce(n.op, n.inputs[0], None if a["flat"] else a["axes"], a["keepdims"], a["dtype"],
                       ddof=a["ddof"] if "ddof" in a else 0)
    else:
        return None
    return b.nodes[idx].aval
