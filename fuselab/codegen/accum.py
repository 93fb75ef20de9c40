"""Accumulators: the C snippets that fold elements into a reduction's running value.

Reduction and row kernels both hold one accumulator per reduce node. The combine
expression comes from the op table (`sum` is `({0} + {1})`); the accumulation type
follows NumPy: sums and products in the result dtype (float16 accumulates in float32,
which is how it sits in registers), max/min in the input dtype, any/all in bool, and
argmax/argmin as (value, first index) pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ops import ARG_REDUCE_OPS
from .emit import Names, may_overflow_undefined, unwrap
from .types import cast_tag, highest, is_half, literal, lowest, register_type


@dataclass
class Accumulator:
    node: int
    op: str
    var: str                   # running value
    idx: str | None            # running index (argmax / argmin)
    acc_dtype: np.dtype        # dtype the accumulation runs in
    value_dtype: np.dtype      # dtype of the elements folded in
    out_dtype: np.dtype        # the reduce node's dtype
    combine: str               # op-table template over {0}, {1}

    @property
    def is_arg(self) -> bool:
        return self.op in ARG_REDUCE_OPS

    @property
    def ctype(self) -> str:
        return register_type(self.acc_dtype)

    @property
    def functor(self) -> str:
        return f"{self.op}_op"

    @property
    def is_max(self) -> str:
        return "true" if self.op == "argmax" else "false"

    def identity(self) -> str:
        if self.is_arg:
            return literal(0, self.acc_dtype)
        if self.op in ("sum", "any"):
            return literal(0, self.acc_dtype)
        if self.op in ("prod", "all"):
            return literal(1, self.acc_dtype)
        if self.op == "max":
            return lowest(self.acc_dtype)
        return highest(self.acc_dtype)

    def declare(self, suffix: str = "") -> list[str]:
        """Declaration with the identity; `suffix` declares an array, e.g. "[4]"."""
        if suffix:
            count = suffix.strip("[]")
            out = [f"{self.ctype} {self.var}{suffix};"]
            if self.is_arg:
                out.append(f"long long {self.idx}{suffix};")
            init = f"{self.var}[e] = {self.identity()};" + (f" {self.idx}[e] = -1;" if self.is_arg else "")
            return out + [f"for (int e = 0; e < {count}; ++e) {{ {init} }}"]
        out = [f"{self.ctype} {self.var} = {self.identity()};"]
        if self.is_arg:
            out.append(f"long long {self.idx} = -1;  // no element seen yet")
        return out

    def value_cast(self, value: str) -> str:
        if self.value_dtype == self.acc_dtype or self.is_arg:
            return value
        return f"fl_cast<{cast_tag(self.acc_dtype)}>({value})"

    def step(self, value: str, index: str, at: str = "") -> str:
        """Fold one element (its value, and its index along the reduction) in."""
        v, i = self.var + at, (self.idx or "") + at
        if self.is_arg:
            return f"fl_arg_combine<{self.is_max}>({v}, {i}, {value}, static_cast<long long>({index}));"
        return f"{v} = {unwrap(self.combine.format(v, self.value_cast(value)))};"

    def merge(self, other_value: str, other_index: str | None, at: str = "") -> str:
        """Fold another partial result in."""
        v, i = self.var + at, (self.idx or "") + at
        if self.is_arg:
            return f"fl_arg_combine<{self.is_max}>({v}, {i}, {other_value}, {other_index});"
        return f"{v} = {unwrap(self.combine.format(v, other_value))};"

    def warp_allreduce(self, width: int) -> list[str]:
        if width <= 1:
            return []
        if self.is_arg:
            return [f"fl_warp_allreduce_arg<{self.is_max}>({self.var}, {self.idx}, {width});"]
        return [f"{self.var} = fl_warp_allreduce({self.var}, {self.functor}(), {width});"]

    def block_allreduce(self) -> list[str]:
        sv, si = f"smem_{self.var}", f"smem_{self.idx}"
        if self.is_arg:
            return [f"__shared__ {self.ctype} {sv}[32];", f"__shared__ long long {si}[32];",
                    f"fl_block_allreduce_arg<{self.is_max}>({self.var}, {self.idx}, {sv}, {si});"]
        return [f"__shared__ {self.ctype} {sv}[32];",
                f"{self.var} = fl_block_allreduce({self.var}, {self.functor}(), {sv});"]

    def result(self, at: str = "") -> str:
        """The reduce node's value in its register type."""
        if self.is_arg:
            return f"{self.idx}{at}"
        if is_half(self.out_dtype):
            return f"fl_cast<fl_half>({self.var}{at})"  # accumulated in float, rounded once
        return f"{self.var}{at}"


def accumulator(graph: Graph, nid: int, names: Names) -> Accumulator:
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
    combine = n.opdef.cuda or ""
    if n.op in ("sum", "prod") and may_overflow_undefined("add" if n.op == "sum" else "multiply", acc):
        # integer sums and products wrap as NumPy's do; the type is explicit because the
        # folded value may still be of the input's narrower type
        helper = "fl_wrap_add" if n.op == "sum" else "fl_wrap_mul"
        combine = f"{helper}<{register_type(np.dtype(acc))}>({{0}}, {{1}})"
    return Accumulator(nid, n.op, var, idx, np.dtype(acc), value_dtype, n.dtype, combine)


def functors(accs: list[Accumulator]) -> list[str]:
    """Combine functors for the warp / block helpers, written from the op table."""
    out, seen = [], set()
    for a in accs:
        if a.is_arg or a.functor in seen:
            continue
        seen.add(a.functor)
        body = unwrap(a.combine.format("a", "b"))
        out.append(f"struct {a.functor} {{ template <class T> __device__ __forceinline__ "
                   f"T operator()(T a, T b) const {{ return T({body}); }} }};")
    return out
