"""Accumulators: the statements that fold elements into a reduction's running value.

The accumulation dtype follows NumPy as the CUDA backend's does (fuselab/codegen/accum.py):
sums and products in the result dtype (float16 held in float32 and rounded once at the
end), max/min in the input dtype, any/all in bool, and argmax/argmin as (value, first
index) pairs where the first NaN wins. The combine expression is the op table's
(pyops.combine), so integer sums wrap as NumPy's do. np.var's one-pass state is Welford's
(count, mean, sum of squared deviations), combined by Chan et al.'s formula, as the
CUDA prelude's fl_welford: blocks of elements are summarised exactly (their mean, then
their squared deviations from it) and folded into the running state in order.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from ..ir import Graph
from ..ops import ARG_REDUCE_OPS, var_keeps_plain_sum
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
    ddof: int = 0              # var: the divisor is the count less ddof
    few: bool = False          # var over fewer than 8 elements: the state keeps the plain sum `su`
    # NumPy's own order (with_numpy_order): a float sum or product folds its elements one
    # after another in plain adds, float16 rounded to half at each step where `half_steps`
    ordered: bool = False
    half_steps: bool = False

    @property
    def is_arg(self) -> bool:
        return self.op in ARG_REDUCE_OPS

    @property
    def welford(self) -> bool:
        """np.var's state: count `n`, mean `v` and sum of squared deviations `m2`."""
        return self.op == "var"

    @property
    def n(self) -> str:
        return f"{self.var}_n{self.at_}"

    @property
    def m2(self) -> str:
        return f"{self.var}_m2{self.at_}"

    @property
    def sh(self) -> str:
        """np.var's shift: the state's first element, which its mean is relative to (as
        fl_welford's: Welford's rounding grows with |mean| / deviation otherwise)."""
        return f"{self.var}_sh{self.at_}"

    @property
    def nf(self) -> str:
        """np.var's count of elements that are not finite (NumPy's result is then NaN)."""
        return f"{self.var}_nf{self.at_}"

    @property
    def su(self) -> str:
        """np.var's plain sum (NumPy's mean of a few elements: see result)."""
        return f"{self.var}_su{self.at_}"

    @property
    def blocked(self) -> bool:
        """A float sum: added in blocks, with a compensated total (unless `ordered`)."""
        return self.op == "sum" and self.acc_dtype.kind == "f" and not self.ordered

    def with_numpy_order(self, half_steps: bool) -> "Acc":
        """This accumulator folding as NumPy's loop does where it reduces along an axis
        that is not the innermost in memory (a column sum, `a.sum(axis=0)` of a C array):
        NumPy then adds each row's elements into the kept outputs, a plain add per row in
        row order (no pairwise summation), and a float16 result is rounded to half at each
        add (its loop converts, adds in float32 and rounds back). `half_steps`: round so
        (fp16_math "numpy"). Only float sums and products change (others already fold in
        order, or exactly)."""
        if self.op in ("sum", "prod") and self.acc_dtype.kind == "f":
            return replace(self, ordered=True, half_steps=half_steps and is_half(self.acc_dtype))
        return self

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

    @property
    def laned(self) -> bool:
        """Folded in CHUNK lanes by fold_loop(lanes=True): max/min (order-free but for
        which NaN or which zero, see lane_combine) and sums (float sums compensated in each
        lane; integer sums wrap, which is order-free)."""
        return self.op in ("max", "min") or (self.op == "sum" and self.acc_dtype.kind in "fiu")

    @property
    def lane(self) -> str:
        return f"{self.var}_l"

    @property
    def lane_comp(self) -> str:
        return f"{self.var}_lc"

    @property
    def _lane_helpers(self) -> bool:
        """Whether the lanes use scalar.py's helpers (numbers; a bool max/min and an
        integer sum are written out)."""
        return self.acc_dtype.kind == "f" or (self.op in ("max", "min") and self.acc_dtype.kind in "iu")

    @property
    def lane_block(self) -> str:
        return f"{self.var}_lb"

    def lane_setup(self) -> list[str]:
        """The lane arrays (a row kernel's are per row: set to the identity here); a
        float sum's also hold their compensations and the current block's plain sums."""
        T = ctor(self.acc_dtype)
        arrays = [self.lane, self.lane_comp, self.lane_block] if self.blocked else [self.lane]
        out = [f"{a} = np.empty({CHUNK}, {T})" for a in arrays]
        if self._lane_helpers:
            return out + [f"fl_lanes_fill({a}, {self.identity()})" for a in arrays]
        return out + [f"for k in range({CHUNK}):", *indent([f"{a}[ix(k)] = {self.identity()}" for a in arrays], 1)]

    def lane_step(self, value: str) -> list[str]:
        """Fold `value` into lane k: a select per lane (no branch), so that the loop over
        k vectorizes. A float sum adds it plainly into the lane's block sum, which
        lane_flush adds into the lane with Neumaier's compensation every BLOCK chunks."""
        v = cast(value, self.value_dtype, self.acc_dtype)
        if self.blocked:
            return [f"{self.lane_block}[ix(k)] += {v}"]
        if self._lane_helpers:
            return [f"fl_lane_{self.op}({self.lane}, ix(k), {v})"]
        lane = f"{self.lane}[ix(k)]"
        return [f"{lane} = {combine(self.op, lane, v, self.acc_dtype)}"]

    def lane_flush(self) -> list[str]:
        """A float sum's block sums added into its lanes, compensated (then set to 0):
        after every BLOCK chunks of a lane fold, and after its last chunk."""
        return [f"fl_lanes_flush({self.lane}, {self.lane_comp}, {self.lane_block})"] if self.blocked else []

    def lane_combine(self) -> list[str]:
        """The lanes folded into the running value (after declare()), in a fixed order.
        Max/min and integer sums: lane 0 first. A float max/min is the serial fold's
        whenever the result is neither a NaN nor a zero (the only values whose bits depend
        on which element gave them): for those the caller folds the row again in order.
        A float sum: lanes k+16, k+32, k+48 are added into lane k (compensated), then lanes
        0..15 into the total with Neumaier's compensation, and every lane's compensation
        into the total's (scalar.fl_lanes_sum)."""
        if self.blocked:
            return [f"{self.v}, {self.comp} = fl_lanes_sum({self.lane}, {self.lane_comp}, {LANES})"]
        if self._lane_helpers:
            return [f"{self.v} = fl_lanes_{self.op}({self.lane})"]
        k_lane = f"{self.lane}[ix(k)]"
        return [f"for k in range({CHUNK}):", f"    {self.v} = {combine(self.op, self.v, k_lane, self.acc_dtype)}"]

    def needs_serial(self) -> str | None:
        """After lane_combine: the condition under which the fold is done again in order
        (a float max/min that came out NaN or zero), else None."""
        if self.op in ("max", "min") and self.acc_dtype.kind == "f":
            return f"{self.v} != {self.v} or {self.v} == 0"
        return None

    def at(self, index: str) -> "Acc":
        """The accumulator kept in element `index` of arrays named after this one."""
        return replace(self, at_=f"[ix({index})]")

    def identity(self) -> str:
        if self.is_arg or self.op in ("sum", "any", "var"):
            return literal(0, register(self.acc_dtype))
        if self.op in ("prod", "all"):
            return literal(1, register(self.acc_dtype))
        return lowest(self.acc_dtype) if self.op == "max" else highest(self.acc_dtype)

    def declare(self) -> list[str]:
        if self.welford:
            return [f"{self.n} = np.int64(0)", f"{self.v} = {self.identity()}", f"{self.m2} = {self.identity()}",
                    f"{self.nf} = np.int64(0)", f"{self.sh} = {self.identity()}"] + \
                ([f"{self.su} = {self.identity()}"] if self.few else [])
        out = [f"{self.v} = {self.identity()}"]
        if self.blocked:
            out.append(f"{self.comp} = {self.identity()}")
        return out + ([f"{self.i} = -1"] if self.is_arg else [])

    def declare_array(self, count: str) -> list[str]:
        """Arrays of `count` accumulators, each set to the identity."""
        names = [self.var] + ([f"{self.var}_c", f"{self.var}_b"] if self.blocked else []) + \
            ([f"{self.var}_m2", f"{self.var}_sh"] if self.welford else []) + ([f"{self.var}_su"] if self.few else [])
        out = [f"{n} = np.empty({count}, {self.array_dtype})" for n in names]
        out += [f"{self.var}_{c} = np.empty({count}, np.int64)" for c in ("n", "nf")] if self.welford else []
        out += [f"{self.idx} = np.empty({count}, np.int64)"] if self.is_arg else []
        init = [f"{n}[ix(j)] = {self.identity()}" for n in names] + ([f"{self.idx}[ix(j)] = -1"] if self.is_arg else []) + \
            ([f"{self.var}_{c}[ix(j)] = 0" for c in ("n", "nf")] if self.welford else [])
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
        if self.welford:   # Welford's update, as fl_welford_op's
            x, d, y = cast(value, self.value_dtype, self.acc_dtype), f"{self.var}_d", f"{self.var}_y"
            return [f"if {self.n} == 0:", f"    {self.sh} = {x}",
                    f"{y} = {x} - {self.sh}",
                    f"{self.n} += 1", f"{d} = {y} - {self.v}",
                    f"{self.v} = {self.v} + {d} / {ctor(self.acc_dtype)}({self.n})",
                    f"{self.m2} = {self.m2} + {d} * ({y} - {self.v})",
                    *([f"{self.su} = {self.su} + {x}"] if self.few else []),
                    f"if not np.isfinite({x}):", f"    {self.nf} += 1"]
        if self.is_arg:
            return [f"if {self.i} < 0 or {self._better(value)}:", f"    {self.v} = {value}",
                    f"    {self.i} = {index}"]
        v = cast(value, self.value_dtype, self.acc_dtype)
        target = self.blk if self.blocked else self.v
        folded = combine(self.op, target, v, self.acc_dtype)
        if self.half_steps:
            folded = f"fl_round_half({folded})"
        return [f"{target} = {folded}"]

    def chan(self, n: str, mean: str, m2: str, nf: str, sh: str, su: str | None = None) -> list[str]:
        """Fold in the (count, mean relative to shift `sh`, squared deviations, non-finite
        count, and where `few` plain sum) of later elements: Chan et al.'s combine, as
        fl_welford_op's (an empty state changes nothing)."""
        d, f, tn = (f"{self.var}_{s}" for s in ("d", "f", "tn"))
        T = ctor(self.acc_dtype)
        return [f"{self.nf} += {nf}", *([f"{self.su} = {self.su} + {su}"] if self.few else []),
                f"if {n} > 0:",
                f"    if {self.n} == 0:",
                f"        {self.n} = {n}", f"        {self.v} = {mean}", f"        {self.m2} = {m2}",
                f"        {self.sh} = {sh}",
                "    else:",
                f"        {tn} = {self.n} + {n}",
                f"        {d} = ({mean} - {self.v}) + ({sh} - {self.sh})",
                f"        {f} = {T}({n}) / {T}({tn})",
                f"        {self.v} = {self.v} + {d} * {f}",
                f"        {self.m2} = {self.m2} + {m2} + {d} * {d} * {T}({self.n}) * {f}",
                f"        {self.n} = {tn}"]

    def block(self, buf: str, lo: str, hi: str) -> list[str]:
        """Fold in buf[lo:hi] (at most BLOCK values of the accumulation dtype): the block's
        mean and squared deviations from it, computed exactly as two short passes (no
        division per element, and loops LLVM can vectorize), then Chan's combine."""
        T = ctor(self.acc_dtype)
        bn, bm, bq = (f"{self.var}_{s}" for s in ("bn", "bm", "bq"))
        return [f"if {self.n} == 0:", f"    {self.sh} = {buf}[{lo}]",
                f"{bn} = {hi} - {lo}",
                f"{bm} = fl_block_sum_shifted({buf}, {lo}, {hi}, {self.sh}) / {T}({bn})",
                f"{bq} = fl_block_sqdev({buf}, {lo}, {hi}, {self.sh}, {bm})",
                *self.chan(bn, bm, bq, f"fl_block_nonfinite({buf}, {lo}, {hi})", self.sh,
                           f"fl_block_sum_shifted({buf}, {lo}, {hi}, {T}(0))" if self.few else None)]

    def partial_arrays(self, name: str, index: str | None, count: int) -> list[tuple[str, str, int]]:
        """Arrays of `count` partial results named after `name` (and `index`): (name, NumPy
        dtype as the source writes it, length) each."""
        out = [(name, self.array_dtype, count)]
        if self.welford:
            out += [(f"{name}_n", "np.int64", count), (f"{name}_m2", self.array_dtype, count),
                    (f"{name}_nf", "np.int64", count), (f"{name}_sh", self.array_dtype, count)]
            out += [(f"{name}_su", self.array_dtype, count)] if self.few else []
        return out + ([(index, "np.int64", count)] if index else [])

    def merge_partial(self, name: str, index: str | None, at: str) -> list[str]:
        """Fold in the partial result at `at` of the arrays `partial_arrays` made."""
        if self.welford:
            return self.chan(*(f"{name}{c}[ix({at})]" for c in ("_n", "", "_m2", "_nf", "_sh", "_su")[:6 if self.few else 5]))
        return self.merge(f"{name}[ix({at})]", f"{index}[ix({at})]" if index else None)

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
        if self.welford:
            return [f"{values}[ix({at})] = {self.v}", f"{values}_n[ix({at})] = {self.n}",
                    f"{values}_m2[ix({at})] = {self.m2}", f"{values}_nf[ix({at})] = {self.nf}",
                    f"{values}_sh[ix({at})] = {self.sh}"] + ([f"{values}_su[ix({at})] = {self.su}"] if self.few else [])
        out = [f"{values}[ix({at})] = {self.total()}"]
        return out + ([f"{indices}[ix({at})] = {self.i}"] if self.is_arg else [])

    def result(self) -> str:
        """The reduce node's value in its register type."""
        if self.is_arg:
            return self.i
        if self.welford:   # as fl_welford_var: 0 / 0 is NaN and x / 0 inf, as NumPy's
            count = f"max({self.n} - {self.ddof}, 0)" if self.ddof else self.n
            T = ctor(self.acc_dtype)
            # where NumPy's passes in the result's dtype overflow: NaN from a non-finite
            # element, inf from a sum or a sum of squared deviations past the limit
            limit = f"{T}(65520.0)" if is_half(self.out_dtype) else f"{T}(np.inf)"
            # NumPy's squared deviations are from its rounded mean m: M2 + n (mean - m)^2, m
            # its sum over n: below 8 elements the plain sum, from 8 on the exact sum
            # rounded to the accumulation type (as fl_welford_var)
            n = f"np.float64({self.n})"
            s = self.su if self.few else f"{T}({n} * np.float64({self.sh}) + {n} * np.float64({self.v}))"
            m = f"np.float64({s} / {T}({self.n}))"
            e = f"((np.float64({self.sh}) - {m}) + np.float64({self.v}) if {self.n} > 0 else 0.0)"
            m2 = (f"({T}(np.float64({self.m2}) + {n} * {e} * {e}) if np.abs({T}({self.n}) * ({self.sh} + {self.v})) "
                  f"< {limit} and {self.m2} < {limit} else {T}(np.inf))")
            return f"({T}(np.nan) if {self.nf} > 0 else {m2} / {T}({count}))"
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
LANES = 16   # a float sum's lanes after the first step of their combine (CHUNK / LANES steps)


def fold_loop(var: str, lo: str, hi: str, accs: list[Acc], lines: list[str], values: dict[int, str],
              names: Names, computes: bool = True, lanes: bool = False, prefetch: Sequence[str] = (),
              kept: Mapping[str, str] | None = None, alongside: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(set-up, loop): fold the values that `lines` compute for each `var` in range(lo, hi)
    into `accs` (`values`: reduce node -> the expression folded in).

    A fold is sequential (fastmath is off, so LLVM keeps the order of a float sum, and
    with it the vector units idle): when the values take computing, each chunk of CHUNK
    elements is first computed into small buffers by a loop without a fold, which LLVM
    vectorizes (a softmax's exp), then folded in order. Loads alone (`computes` False) are
    folded directly, unless a variance wants its blocks in a buffer.

    With `lanes`, sums and max/min fold into CHUNK lanes instead (Acc.laned: element k of
    each chunk into lane k, in the vectorized loop that loads it, or in a second loop
    over the chunk where the values take computing: _lane_fold), combined in lane order
    after the loop: the order depends on the shapes only. The others fold as above. The loop's statements must be declared after the set-up.

    `prefetch`: statements run once a chunk, before it is computed (a row kernel's
    prefetches of the next row, row.py), where the loop runs in chunks. `kept`: values
    that `lines` also store in a row buffer (value -> the buffer, indexed by `var`), which
    a lane fold reads back instead of a chunk buffer of its own. `alongside`: statements
    run for each `var` after `lines` that the fold does not need (a row kernel's output
    pass of the row before, row.py), left out where a fold is done again in order."""
    if lanes and any(a.laned for a in accs):
        return _lane_fold(var, lo, hi, accs, lines, values, names, computes, prefetch, kept or {}, list(alongside))
    return _fold_loop(var, lo, hi, accs, [*lines, *alongside], values, names, computes, prefetch)


def _fold_loop(var: str, lo: str, hi: str, accs: list[Acc], lines: list[str], values: dict[int, str],
               names: Names, computes: bool, prefetch: Sequence[str] = (),
               after: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """fold_loop without lanes; `prefetch` runs at the top of each chunk and `after` at
    its end, where the loop runs in chunks (a loop without them, no value to compute, takes none)."""
    welford = [a for a in accs if a.welford]
    if not computes and not welford:
        return [], blocked_loop(var, lo, hi, accs, [*lines, *[l for a in accs for l in a.step(values[a.node], var)]])
    setup: list[str] = []
    buffers: dict[tuple[str, np.dtype], str] = {}     # (expression, dtype) -> buffer of CHUNK values

    def buffer(a: Acc) -> str:
        dt = a.acc_dtype if a.welford else a.value_dtype   # a variance's values: in its own type
        key = (values[a.node], register(dt))
        if key not in buffers:
            buffers[key] = names.fresh(f"buf_{values[a.node]}")
            setup.append(f"{buffers[key]} = np.empty({CHUNK}, {ctor(dt)})")
        return buffers[key]
    for a in accs:
        buffer(a)
    value_dtypes = {values[a.node]: a.value_dtype for a in accs}
    compute = [f"{var} = {var}_c + k", *lines,
               *[f"{b}[ix(k)] = {cast(v, value_dtypes[v], dt)}" for (v, dt), b in buffers.items()]]
    # float sums of values already of their type add each block of a buffer as a tree
    tree = [a for a in accs if a.blocked and register(a.value_dtype) == register(a.acc_dtype)]
    steps = [l for a in accs if a not in tree and not a.welford for l in a.step(f"{buffer(a)}[ix(k)]", f"{var}_c + k")]
    if not tree and not welford:
        fold = blocked_loop("k", "0", "n_c", accs, steps)
    else:
        fold = [f"for k_b in range(0, n_c, {BLOCK}):", f"    k_e = min(k_b + {BLOCK}, n_c)",
                *indent([l for a in accs if a not in tree for l in a.begin_block()], 1),
                *[f"    {a.blk} = fl_block_sum({buffer(a)}, k_b, k_e)" for a in tree],
                *indent([l for a in welford for l in a.block(buffer(a), "k_b", "k_e")], 1),
                *(["    for k in range(k_b, k_e):", *indent(steps, 2)] if steps else []),
                *indent([l for a in accs for l in a.end_block()], 1)]
    loop = [f"for {var}_c in range({lo}, {hi}, {CHUNK}):", f"    n_c = min({CHUNK}, {hi} - {var}_c)",
            *indent(list(prefetch), 1), "    for k in range(n_c):", *indent(compute, 2), *indent(fold, 1),
            *indent(list(after), 1)]
    return setup, loop


def _lane_fold(var: str, lo: str, hi: str, accs: list[Acc], lines: list[str], values: dict[int, str],
               names: Names, computes: bool, prefetch: Sequence[str],
               kept: Mapping[str, str], alongside: list[str]) -> tuple[list[str], list[str]]:
    """fold_loop with lanes: (set-up, loop and lane combine).

    Values that take computing (a softmax's exp) are computed for a chunk in one loop,
    into a chunk buffer (or the row buffer `kept` names), and folded into the lanes by a
    second loop over the chunk: the same order and results as one loop doing both, but
    LLVM's vectorized loops are then lighter (fewer live registers: the fold's lane
    arrays are not held across the computation), 10% of a softmax on an AVX2 core."""
    laned = [a for a in accs if a.laned]
    rest = [a for a in accs if not a.laned]
    setup = [l for a in laned for l in a.lane_setup()]
    flushes = [l for a in laned for l in a.lane_flush()]
    since = f"{var}_c" if lo == "0" else f"({var}_c - {lo})"
    after = [f"if {since} % {CHUNK * BLOCK} == {CHUNK * (BLOCK - 1)} or {var}_c + {CHUNK} >= {hi}:",
             *indent(flushes, 1)] if flushes else []
    if rest:    # the others through fold_loop's chunk buffers, in the same chunk loop
        steps = [l for a in laned for l in a.lane_step(values[a.node])]
        rsetup, rloop = _fold_loop(var, lo, hi, rest, lines + alongside + steps, values, names, True, prefetch, after)
        setup += rsetup
        loop = rloop
    elif computes:
        reads: dict[tuple[str, np.dtype], str] = {}
        stores: list[str] = []
        for a in laned:
            v = values[a.node]
            key = (v, register(a.value_dtype))
            if key in reads:
                continue
            if v in kept:
                reads[key] = f"{kept[v]}[ix({var}_c + k)]"
            else:
                buf = names.fresh(f"buf_{v}")
                setup.append(f"{buf} = np.empty({CHUNK}, {ctor(a.value_dtype)})")
                stores.append(f"{buf}[ix(k)] = {v}")
                reads[key] = f"{buf}[ix(k)]"
        steps = [l for a in laned for l in a.lane_step(reads[(values[a.node], register(a.value_dtype))])]
        loop = [f"for {var}_c in range({lo}, {hi}, {CHUNK}):", f"    n_c = min({CHUNK}, {hi} - {var}_c)",
                *indent(list(prefetch), 1),
                "    for k in range(n_c):", f"        {var} = {var}_c + k", *indent(lines + alongside + stores, 2),
                "    for k in range(n_c):", *indent(steps, 2), *indent(after, 1)]
    else:
        steps = [l for a in laned for l in a.lane_step(values[a.node])]
        loop = [f"for {var}_c in range({lo}, {hi}, {CHUNK}):", f"    n_c = min({CHUNK}, {hi} - {var}_c)",
                *indent(list(prefetch), 1),
                "    for k in range(n_c):", f"        {var} = {var}_c + k", *indent(lines + alongside + steps, 2),
                *indent(after, 1)]
    for a in laned:
        loop += a.lane_combine()
        cond = a.needs_serial()
        if cond:
            again = [f"{a.v} = {a.identity()}",
                     *blocked_loop(var, lo, hi, [a], [*lines, *a.step(values[a.node], var)])]
            loop += [f"if {cond}:   # a NaN or a zero: which one is the serial fold's", *indent(again, 1)]
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
    names.used.update(f"{var}_{s}" for s in ("c", "b", "t", "n", "m2", "d", "f", "tn", "bn", "bm", "bq", "l", "lc", "ls",
                                             "lt", "lx", "lb", "sh", "nf", "su", "y"))
    idx = names.fresh(f"acc{nid}_index") if n.op in ARG_REDUCE_OPS else None
    return Acc(nid, n.op, var, idx, np.dtype(acc), value_dtype, n.dtype, ddof=int(n.args["ddof"]) if "ddof" in n.args else 0,
               few=var_keeps_plain_sum(n.op, graph.nodes[n.inputs[0]].aval.shape, n.args["axes"]))
