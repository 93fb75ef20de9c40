"""Accumulators: the statements that fold elements into a reduction's running value.

The accumulation dtype follows NumPy as the CUDA backend's does (fuselab/codegen/accum.py):
sums and products in the result dtype (float16 held in float32 and rounded once at the
end), max/min in the input dtype, any/all in bool, and argmax/argmin as (value, first
index) pairs where the first NaN wins. The combine expression is the op table's
(pyops.combine), so integer sums wrap as NumPy's do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ops import ARG_REDUCE_OPS
from .emit import Names
from .pyops import combine
from .pytypes import cast, ctor, highest, is_half, literal, lowest, register


@dataclass(frozen=True)
class Acc:
    node: int
    op: str
    var: str                   # running value (a name, or an array element `acc5[j]`)
    idx: str | None            # running index (argmax / argmin)
    acc_dtype: np.dtype        # the dtype the accumulation is in (float16: held in float32)
    value_dtype: np.dtype      # dtype of the elements folded in
    out_dtype: np.dtype        # the reduce node's dtype

    @property
    def is_arg(self) -> bool:
        return self.op in ARG_REDUCE_OPS

    @property
    def array_dtype(self) -> str:
        """The NumPy dtype of an array of these accumulators, as generated code names it."""
        return ctor(self.acc_dtype)

    def at(self, index: str) -> "Acc":
        """The accumulator kept in element `index` of arrays named after this one."""
        return Acc(self.node, self.op, f"{self.var}[{index}]", f"{self.idx}[{index}]" if self.idx else None,
                   self.acc_dtype, self.value_dtype, self.out_dtype)

    def identity(self) -> str:
        if self.is_arg or self.op in ("sum", "any"):
            return literal(0, register(self.acc_dtype))
        if self.op in ("prod", "all"):
            return literal(1, register(self.acc_dtype))
        return lowest(self.acc_dtype) if self.op == "max" else highest(self.acc_dtype)

    def declare(self) -> list[str]:
        return [f"{self.var} = {self.identity()}"] + ([f"{self.idx} = -1"] if self.is_arg else [])

    def declare_array(self, count: str) -> list[str]:
        """Arrays of `count` accumulators, each set to the identity."""
        out = [f"{self.var} = np.full({count}, {self.identity()}, {self.array_dtype})"]
        return out + ([f"{self.idx} = np.full({count}, -1, np.int64)"] if self.is_arg else [])

    def _better(self, value: str) -> str:
        """Whether `value` replaces the running extreme (a later index, so ties keep the
        first): a NaN beats everything but an earlier NaN."""
        cmp = ">" if self.op == "argmax" else "<"
        if self.value_dtype.kind == "f":
            return f"({self.var} == {self.var} and ({value} != {value} or {value} {cmp} {self.var}))"
        return f"{value} {cmp} {self.var}"

    def step(self, value: str, index: str) -> list[str]:
        """Fold one element (its value and its index along the reduction) in."""
        if self.is_arg:
            return [f"if {self.idx} < 0 or {self._better(value)}:", f"    {self.var} = {value}",
                    f"    {self.idx} = {index}"]
        v = cast(value, self.value_dtype, self.acc_dtype)
        return [f"{self.var} = {combine(self.op, self.var, v, self.acc_dtype)}"]

    def merge(self, value: str, index: str | None) -> list[str]:
        """Fold in another partial result of later elements (an empty one: index -1)."""
        if self.is_arg:
            return [f"if {index} >= 0 and ({self.idx} < 0 or {self._better(value)}):",
                    f"    {self.var} = {value}", f"    {self.idx} = {index}"]
        return [f"{self.var} = {combine(self.op, self.var, value, self.acc_dtype)}"]

    def store_partial(self, values: str, indices: str | None, at: str) -> list[str]:
        out = [f"{values}[{at}] = {self.var}"]
        return out + ([f"{indices}[{at}] = {self.idx}"] if self.is_arg else [])

    def result(self) -> str:
        """The reduce node's value in its register type."""
        if self.is_arg:
            return self.idx or ""
        if is_half(self.out_dtype):
            return f"fl_round_half({self.var})"   # accumulated in float32, rounded once
        return self.var


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
    idx = names.fresh(f"acc{nid}_index") if n.op in ARG_REDUCE_OPS else None
    return Acc(nid, n.op, var, idx, np.dtype(acc), value_dtype, n.dtype)
