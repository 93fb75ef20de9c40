"""Accumulators: the C snippets that fold elements into a reduction's running value.

Reduction and row kernels both hold one accumulator per reduce node. What an accumulation
is — its type, start value and combine — is `ops.reduce_rule`, the one definition every
path reads. The combines are typed templates of the prelude (`fl_add_op<float>`,
`fl_maximum_op<long long>`...), instantiated with the rule's accumulator type: two
sibling reductions of different types in one kernel each get their own, and a value of
another type handed to a combine does not compile. argmax / argmin fold (value, first
index) pairs through their own typed helpers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..ops import ReduceRule, reduce_rule, var_keeps_plain_sum
from .emit import Names
from .types import cast_tag, is_half, literal, register_type


@dataclass(frozen=True)
class Accumulator:
    node: int
    rule: ReduceRule
    var: str                   # running value
    idx: str | None            # running index (argmax / argmin)
    value_dtype: np.dtype      # dtype of the elements folded in
    out_dtype: np.dtype        # the reduce node's dtype
    ddof: int = 0              # var: the divisor is count - ddof
    few: bool = False          # var over fewer than 8 elements: its state keeps the plain sum

    @property
    def op(self) -> str:
        return self.rule.op

    @property
    def acc_dtype(self) -> np.dtype:
        return self.rule.acc

    @property
    def is_arg(self) -> bool:
        return self.rule.is_arg

    @property
    def value_type(self) -> str:
        """The C type of one element in the accumulator's dtype."""
        return register_type(self.rule.acc)

    @property
    def ctype(self) -> str:
        """The running value's C type: the dtype's, or (count, mean, M2) for a variance."""
        if self.rule.combine == "welford":
            return f"fl_welford<{self.value_type}{', true' if self.few else ''}>"
        return self.value_type

    @property
    def nbytes(self) -> int:
        return self.rule.acc.itemsize * ((6 if self.few else 5) if self.rule.combine == "welford" else 1) if self.rule.acc != np.float16 \
            else 4

    @property
    def functor(self) -> str:
        """The typed combine, e.g. `fl_add_op<long long>()`."""
        return f"fl_{self.rule.combine}_op<{self.value_type}{', true' if self.few else ''}>()"

    @property
    def is_max(self) -> str:
        return "true" if self.rule.combine == "argmax" else "false"

    def identity(self) -> str:
        if self.rule.combine == "welford":
            return f"{self.ctype}{{}}"   # no element: count, mean and M2 zero
        return literal(self.rule.start, self.rule.acc)

    def declare(self, suffix: str = "") -> list[str]:
        """Declaration with the start value; `suffix` declares an array, e.g. "[4]"."""
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
        """An element in the accumulator's type, cast as NumPy casts it (a sum of float32
        with dtype=int32 truncates each element first)."""
        if self.value_dtype == self.acc_dtype or (is_half(self.value_dtype) and self.acc_dtype == np.float32):
            return value   # float16 elements are already float registers
        return f"fl_cast<{cast_tag(self.acc_dtype)}>({value})"

    def step(self, value: str, index: str, at: str = "") -> str:
        """Fold one element (its value, and its index along the reduction) in."""
        v, i = self.var + at, (self.idx or "") + at
        if self.is_arg:
            return (f"fl_arg_combine<{self.is_max}>({v}, {i}, {self.value_cast(value)}, "
                    f"static_cast<long long>({index}));")
        return f"{v} = {self.functor}({v}, {self.value_cast(value)});"

    def merge(self, other_value: str, other_index: str | None, at: str = "") -> str:
        """Fold another partial result (of the accumulator's type) in."""
        v, i = self.var + at, (self.idx or "") + at
        if self.is_arg:
            return f"fl_arg_combine<{self.is_max}>({v}, {i}, {other_value}, {other_index});"
        return f"{v} = {self.functor}({v}, {other_value});"

    def warp_allreduce(self, width: int) -> list[str]:
        if width <= 1:
            return []
        if self.is_arg:
            return [f"fl_warp_allreduce_arg<{self.is_max}>({self.var}, {self.idx}, {width});"]
        return [f"{self.var} = fl_warp_allreduce({self.var}, {self.functor}, {width});"]

    def block_allreduce(self) -> list[str]:
        return self._through_shared("fl_block_allreduce", 32)

    def group_allreduce(self, group: int, groups: int) -> list[str]:
        """Every thread gets the reduction of the threads with its index modulo `group`
        (a slab's row), folded as a tree over the stripes through `group * groups` values
        of shared memory."""
        if groups <= 1:
            return []
        return self._through_shared("fl_group_allreduce", group * groups, f", {group}, {groups}")

    def _through_shared(self, helper: str, size: int, extra: str = "") -> list[str]:
        """A prelude allreduce `helper` (its `_arg` form for argmax/argmin) over a shared
        scratch array of `size` values declared here."""
        sv, si = f"smem_{self.var}", f"smem_{self.idx}"
        if self.is_arg:
            return [f"__shared__ {self.ctype} {sv}[{size}];", f"__shared__ long long {si}[{size}];",
                    f"{helper}_arg<{self.is_max}>({self.var}, {self.idx}, {sv}, {si}{extra});"]
        return [f"__shared__ {self.ctype} {sv}[{size}];",
                f"{self.var} = {helper}({self.var}, {self.functor}, {sv}{extra});"]

    def result(self, at: str = "") -> str:
        """The reduce node's value in its register type."""
        if self.is_arg:
            return f"{self.idx}{at}"
        value = f"{self.var}{at}"
        if self.rule.combine == "welford":
            # the limit where NumPy's passes in the result's dtype overflow (see the prelude)
            limit = "65520.0" if is_half(self.out_dtype) else "fl_inf<double>()"
            value = f"fl_welford_var({value}, {self.ddof}, {limit})"
        if is_half(self.out_dtype):
            return f"fl_cast<fl_half>({value})"  # accumulated in float, rounded once
        return value


def accumulator(graph: Graph, nid: int, names: Names) -> Accumulator:
    n = graph.nodes[nid]
    value_dtype = graph.nodes[n.inputs[0]].dtype
    rule = reduce_rule(n.op, value_dtype, n.dtype)
    var = names.fresh(f"acc{nid}")
    idx = names.fresh(f"acc{nid}_index") if rule.is_arg else None
    return Accumulator(nid, rule, var, idx, value_dtype, n.dtype, n.args["ddof"] if "ddof" in n.args else 0,
                       few=var_keeps_plain_sum(n.op, graph.nodes[n.inputs[0]].aval.shape, n.args["axes"]))
