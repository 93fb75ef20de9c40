"""Accumulators: the statements that fold elements into a reduction's running value.

The accumulation dtype follows NumPy as the CUDA backend's does (fuselab/codegen/accum.py):
sums and products in the result dtype (float16 held in float32 and rounded once at the
end), max/min in the input dtype, any/all in bool, and argmax/argmin as (value, first
index) pairs where the first NaN wins. The combine expression is the op table's
(pyops.combine), so integer sums wrap as NumPy's do.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir import Graph
from ..ops import ARG_REDUCE_OPS
from .emit import Names, indent
from .pyops import combine
from .pytypes import cast, ctor, highest, is_half, literal, lowest, register


BLOCK = 16   # elements a float sum adds plainly before a compensated add (see Acc)


@dataclass(frozen=True)
class Acc:
    """One reduce node's running state, as names in the generated code.

    Float sums are NumPy-accurate without NumPy's order: elements are added plainly in
    blocks of BLOCK (which the loops make explicit), and each block's sum is added to
    the total with Neumaier's compensation. The error is then that of the short blocks,
    about NumPy's pairwise error, whatever the length of the reduction, and the order is
    fixed by the shapes alone."""

    node: int
    op: str
    var: str                   # running value
    idx: str | None            # running index (argmax / argmin)
    acc_dtype: np.dtype        # the dtype the accumulation is in (float16: held in float32)
    value_dtype: np.dtype      # dtype of the elements folded in
    out_dtype: np.dtype        # the reduce node's dtype
    at_: str = ""              # "[j]": the state lives in element j of arrays of these names

    @property
    def is_arg(self) -> bool:
        return self.op in ARG_REDUCE_OPS

    @property
    def blocked(self) -> bool:
        """A float sum: added in blocks, with a compensated total."""
        return self.op == "sum" and self.acc_dtype.kind == "f"

    @property
    def v(self) -> str:
        return self.var + self.at_

    @property
    def i(self) -> str:
        return f"{self.idx}{self.at_}"

    @property
    def comp(self) -> str:
        return f"{self.var}_c{self.at_}"

    @property
    def blk(self) -> str:
        return f"{self.var}_b{self.at_}"

    @property
    def array_dtype(self) -> str:
        """The NumPy dtype of an array of these accumulators, as generated code names it."""
        return ctor(self.acc_dtype)

    def at(self, index: str) -> "Acc":
        """The accumulator kept in element `index` of arrays named after this one."""
        return replace(self, at_=f"[ix({index})]")

    def identity(self) -> str:
        if self.is_arg or self.op in ("sum", "any"):
            return literal(0, register(self.acc_dtype))
        if self.op in ("prod", "all"):
            return literal(1, register(self.acc_dtype))
        return lowest(self.acc_dtype) if self.op == "max" else highest(self.acc_dtype)

    def declare(self) -> list[str]:
        out = [f"{self.v} = {self.identity()}"]
        if self.blocked:
            out.append(f"{self.comp} = {self.identity()}")
        return out + ([f"{self.i} = -1"] if self.is_arg else [])

    def declare_array(self, count: str) -> list[str]:
        """Arrays of `count` accumulators, each set to the identity."""
        names = [self.var] + ([f"{self.var}_c", f"{self.var}_b"] if self.blocked else [])
        out = [f"{n} = np.empty({count}, {self.array_dtype})" for n in names]
        out += [f"{self.idx} = np.empty({count}, np.int64)"] if self.is_arg else []
        init = [f"{n}[ix(j)] = {self.identity()}" for n in names] + ([f"{self.idx}[ix(j)] = -1"] if self.is_arg else [])
        return out + [f"for j in range({count}):", *indent(init, 1)]   # (np.full costs a compile of its own)

    def begin_block(self) -> list[str]:
        return [f"{self.blk} = {self.identity()}"] if self.blocked else []

    def end_block(self) -> list[str]:
        return self._compensated(self.blk) if self.blocked else []

    def _compensated(self, x: str) -> list[str]:
        """Neumaier's compensated addition of `x` to the total."""
        t = f"{self.var}_t"
        return [f"{t} = {self.v} + {x}",
                f"if np.abs({self.v}) >= np.abs({x}):",
                f"    {self.comp} += ({self.v} - {t}) + {x}",
                "else:",
                f"    {self.comp} += ({x} - {t}) + {self.v}",
                f"{self.v} = {t}"]

    def _better(self, value: str) -> str:
        """Whether `value` replaces the running extreme (a later index, so ties keep the
        first): a NaN beats everything but an earlier NaN."""
        cmp = ">" if self.op == "argmax" else "<"
        if self.value_dtype.kind == "f":
            return f"({self.v} == {self.v} and ({value} != {value} or {value} {cmp} {self.v}))"
        return f"{value} {cmp} {self.v}"

    def step(self, value: str, index: str) -> list[str]:
        """Fold one element (its value and its index along the reduction) in."""
        if self.is_arg:
            return [f"if {self.i} < 0 or {self._better(value)}:", f"    {self.v} = {value}",
                    f"    {self.i} = {index}"]
        v = cast(value, self.value_dtype, self.acc_dtype)
        target = self.blk if self.blocked else self.v
        return [f"{target} = {combine(self.op, target, v, self.acc_dtype)}"]

    def merge(self, value: str, index: str | None) -> list[str]:
        """Fold in another partial result of later elements (an empty one: index -1)."""
        if self.is_arg:
            return [f"if {index} >= 0 and ({self.i} < 0 or {self._better(value)}):",
                    f"    {self.v} = {value}", f"    {self.i} = {index}"]
        if self.blocked:
            return self._compensated(value)
        return [f"{self.v} = {combine(self.op, self.v, value, self.acc_dtype)}"]

    def total(self) -> str:
        """The accumulated value in the accumulation dtype (a compensated sum: total plus
        compensation, unless the total is already inf or NaN)."""
        if self.blocked:
            return f"({self.v} + {self.comp} if np.isfinite({self.v}) else {self.v})"
        return self.v

    def store_partial(self, values: str, indices: str | None, at: str) -> list[str]:
        out = [f"{values}[ix({at})] = {self.total()}"]
        return out + ([f"{indices}[ix({at})] = {self.i}"] if self.is_arg else [])

    def result(self) -> str:
        """The reduce node's value in its register type."""
        if self.is_arg:
            return self.i
        if is_half(self.out_dtype):
            return f"fl_round_half({self.total()})"   # accumulated in float32, rounded once
        return self.total()


def blocked_loop(var: str, lo: str, hi: str, accs: list[Acc], body: list[str],
                 each: str | None = None) -> list[str]:
    """`for var in range(lo, hi):` around `body`, in blocks of BLOCK when an accumulator
    adds in blocks; `each` is the loop header over array accumulators (`for j in ...:`)."""
    if not any(a.blocked for a in accs):
        return [f"for {var} in range({lo}, {hi}):", *indent(body, 1)]

    def around(lines: list[str]) -> list[str]:
        return [each, *indent(lines, 1)] if (each and lines) else lines
    begin = around([l for a in accs for l in a.begin_block()])
    end = around([l for a in accs for l in a.end_block()])
    return [f"for {var}_b in range({lo}, {hi}, {BLOCK}):", *indent(begin, 1),
            f"    for {var} in range({var}_b, min({var}_b + {BLOCK}, {hi})):", *indent(body, 2),
            *indent(end, 1)]


CHUNK = 64   # elements computed (in a loop LLVM vectorizes) before they are folded in order


def fold_loop(var: str, lo: str, hi: str, accs: list[Acc], lines: list[str], values: dict[int, str],
              names: Names, computes: bool = True) -> tuple[list[str], list[str]]:
    """(set-up, loop): fold the values that `lines` compute for each `var` in range(lo, hi)
    into `accs` (`values`: reduce node -> the expression folded in).

    A fold is sequential (fastmath is off, so LLVM keeps the order of a float sum, and
    with it the vector units idle): when the values take computing, each chunk of CHUNK
    elements is first computed into small buffers by a loop without a fold, which LLVM
    vectorizes (a softmax's exp), then folded in order. Loads alone (`computes` False) are
    folded directly."""
    if not computes:
        return [], blocked_loop(var, lo, hi, accs, [*lines, *[l for a in accs for l in a.step(values[a.node], var)]])
    setup: list[str] = []
    buffers: dict[str, str] = {}
    for a in accs:
        v = values[a.node]
        if v not in buffers:
            buffers[v] = names.fresh(f"buf_{v}")
            setup.append(f"{buffers[v]} = np.empty({CHUNK}, {ctor(a.value_dtype)})")
    compute = [f"{var} = {var}_c + k", *lines, *[f"{b}[ix(k)] = {v}" for v, b in buffers.items()]]
    # float sums of values already of their type add each block of a buffer as a tree
    tree = [a for a in accs if a.blocked and register(a.value_dtype) == register(a.acc_dtype)]
    steps = [l for a in accs if a not in tree for l in a.step(f"{buffers[values[a.node]]}[ix(k)]", f"{var}_c + k")]
    if not tree:
        fold = blocked_loop("k", "0", "n_c", accs, steps)
    else:
        fold = [f"for k_b in range(0, n_c, {BLOCK}):",
                *indent([l for a in accs if a not in tree for l in a.begin_block()], 1),
                *[f"    {a.blk} = fl_block_sum({buffers[values[a.node]]}, k_b, min(k_b + {BLOCK}, n_c))"
                  for a in tree],
                *([f"    for k in range(k_b, min(k_b + {BLOCK}, n_c)):", *indent(steps, 2)] if steps else []),
                *indent([l for a in accs for l in a.end_block()], 1)]
    loop = [f"for {var}_c in range({lo}, {hi}, {CHUNK}):", f"    n_c = min({CHUNK}, {hi} - {var}_c)",
            "    for k in range(n_c):", *indent(compute, 2), *indent(fold, 1)]
    return setup, loop


def accumulator(graph: Graph, nid: int, names: Names) -> Acc:
    n = graph.nodes[nid]
    value_dtype = graph.nodes[n.inputs[0]].dtype
    if n.op in ARG_REDUCE_OPS:
        acc = value_dtype
    elif n.op in ("any", "all"):
        acc = np.dtype(bool)
    else:
        acc = n.dtype
    var = names.fresh(f"acc{nid}")
    names.used.update({f"{var}_c", f"{var}_b", f"{var}_t"})
    idx = names.fresh(f"acc{nid}_index") if n.op in ARG_REDUCE_OPS else None
    return Acc(nid, n.op, var, idx, np.dtype(acc), value_dtype, n.dtype)
