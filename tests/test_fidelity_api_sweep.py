"""Fidelity sweep of NumPy's API outside the ufuncs: cells GENERATED from tables, each run
plainly and under `%%fuse --backend cpu` by the fidelity harness (tests/fidelity.py;
bound arrays' layout and flags too, test_fidelity_realrun.LayoutHarness).

A cell crosses, at random but from a fixed seed:

- a call: a reduction with its keywords (axis as None, negative, a tuple, positional;
  keepdims, dtype, out= fresh or the input itself, where=, ddof, initial, q), a shape or
  indexing function, a linear-algebra or set or histogram function, an ndarray method
  or attribute, or one of NumPy's public callables found by probing `np.__all__`
  (and np.linalg's, np.fft's) with a few argument patterns (`AUTO`);
- its input: bool, int8, uint8, float16, float32, float64 or complex64; C-ordered,
  reversed, Fortran-ordered, strided, transposed, empty, one row, 1-D, one element,
  0-d, with a NaN; a Python or NumPy scalar;
- its surroundings: the call alone, between fusible elementwise ops (its input and
  output traced values), the input written after the call (the result may be a view),
  the input written before it, a write through the result, its result printed or
  displayed, inside try/except.

Cells that raise plainly must raise the same error under %%fuse and leave the names as
they were. `FUSELAB_API_SWEEP=N` generates N cells (default `CI_CELLS`) for long runs,
`FUSELAB_API_SWEEP_SEED` other ones.

Classes of difference this sweep found, and fixed (REGRESSIONS, one cell each):

- a warning NumPy's Python code gives with stacklevel=2 from a call fuselab made in the
  user's place without tracing it (`np.cov(s)` of a NumPy scalar, `np.nanvar` of a
  constant array: "Degrees of freedom <= 0") was placed at NumPy's own line, not the
  user's: the frame walk started inside NumPy's function (warn.py `_give_as_caller`);
- `a.std(correction=1)` was accepted (NumPy's methods in _methods.py take no
  `correction`: TypeError); `a.mT` of a 0-d array gave swapaxes' AxisError, of a NumPy
  scalar a ValueError (NumPy: ValueError, AttributeError) (methods.py);
- `np.place(a, mask, a)`: the values were a copy of the target, not the array written
  into as it changes (mutate.py `writer`);
- the layout NumPy gives a result the trace did not follow, so a later element-wise
  result's strides differed: np.argwhere's transposed result, the Fortran order of a
  cumsum/sort/roll/fft of a Fortran-ordered array, np.concatenate's of transposed
  arrays, views NumPy takes of the array it makes of a list (`np.ravel([a, a])` owns no
  memory, `np.permute_dims([t, t])`)
  (opaque.py `data_dependent`, `_k_ordered_like_operand`; shapes.py `view_of`); a new
  array with a length-1 axis (`a.T.min(axis=0, keepdims=True) * 1`) kept the kernel's
  stride there, not the one NumPy's order gives it (layout.py `with_order`);
- writes through the views a real run returned of a view of the user's whole array in
  its own shape (`np.trim_zeros(a.ravel())` of 1-D, `np.split(a[::1], 3)`), or of a
  copy (`t = a.copy(); np.split(t, 3)`), were lost (silently: `a`, `t` unchanged): the
  function got a private copy (realrun.py `_view_of_user_array`, `settle`); so did a view
  of a user's array that is itself a view (`a = m[::-1, ::-1]`; `a[::-1].view(np.uint8)`
  gave a result where NumPy raises: the copy was contiguous);
- the warnings a function run as plain NumPy gave before raising were dropped
  (`np.mean(a, where=False, out=a, dtype=np.uint8)` in a try: "Mean of empty slice")
  (realrun.py `run_for_real`);
- `f = a.dump` (a method fuselab runs for real) was bound as fuselab's closure, not the
  array's method (methods.py `_getattr`, bind.py);
- `a.conj()` of a real array was a copy (NumPy: the array itself);
  `np.broadcast_to(a, a.shape)` was writeable (NumPy: read-only), as the graph has no
  broadcast there; `a.__array__(np.float32)` of a transposed array was not C-ordered;
  `np.diff(a, n=0)` a copy (NumPy: a itself); `np.trim_zeros(a)` a copy
  (NumPy: a view of a); np.median's result with keepdims, np.nanmedian's along an axis,
  owned its memory (NumPy's is a view of an array it made);
- np.unique_all / unique_counts / unique_inverse gave plain tuples (NumPy: named tuples,
  printed with their field names);
- `np.fft.fft2([a, a])` (a list of traced arrays where a rule takes one array) raised
  an internal AttributeError; `np.fft.irfft2` of float16 gave float16 (NumPy: float32;
  irfft over one axis keeps float16);
- static arguments NumPy rejects at the line raised only when the plan ran (a RunError
  the cell could not catch): `np.cumulative_sum(m)` of 2-D without an axis, `np.tril`
  of 0-d; `include_initial=True` gave the shape without the initial element;
  `np.full_like(i8, 300)` gave an array (NumPy: OverflowError);
- a complex array reduced into a real dtype= (`np.sum(c, dtype=np.float32)`) gave no
  ComplexWarning; `c.cumprod(dtype=...)` gave it from fromnumeric.py (the method runs no
  Python of NumPy's: the user's line), and np.add.reduce's from NumPy's np.sum line
  (reductions.py `complex_cast_warning`, opaque.py, ufuncs.py);
- `a.imag` of a real Fortran-ordered array (new zeros "like" it, in order 'A') was
  C-ordered; `a.flags['F_CONTIGUOUS']` of the user's transposed array after an update in
  place was the kernel value's (values.py `TracedFlags`); a complex array cast or reduced
  into bool warned ComplexWarning (NumPy: silent);
- `np.arange(np.float16(2.5))` gave float16 (NumPy 2.4 takes NumPy scalars' values:
  float64), `np.copyto(s, 1)` into a traced NumPy scalar wrote into a copy (NumPy's
  TypeError) (creation.py `arange`, mutate.py `writer`);
- `np.std(a, dtype=np.uint8)` gave float16 (NumPy takes the root in place: uint8, or its
  casting error along an axis); `np.round` of a 0-d integer array gave a 0-d array (NumPy:
  a scalar).

Left as strict xfails (LIMITS): `__array_priority__`, `__array_interface__` and
`a.__array__() is a` (NumPy's protocols read them from the tracer too), a traced NumPy
scalar's `__index__`, the stride 0 np.broadcast_to gives a length-1 axis, the wording of
a cast's warning inside cumsum's dtype= ("in accumulate"), and updating an array while a
view of it in another dtype lives.
Not generated: `np.nancumsum(a0d, out=a0d)`, which crashes NumPy 2.4 itself (a segfault).
"""
from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

pytest.importorskip("IPython")

from fidelity import Case, assert_as_plain  # noqa: E402
from test_fidelity_realrun import LayoutHarness  # noqa: E402

SEED = int(os.environ.get("FUSELAB_API_SWEEP_SEED", 20261205))
CI_CELLS = 500
N_CELLS = int(os.environ.get("FUSELAB_API_SWEEP", CI_CELLS))

SETUP = "import numpy as np\n"


@pytest.fixture(scope="module")
def harness():
    return LayoutHarness()


# -- inputs: the array `a` a cell starts from --------------------------------------

DTYPES = ["bool", "int8", "uint8", "float16", "float32", "float64", "complex64"]
_SMALL = "(np.arange({n}) % 5 - 2)"   # small exact values: sums are exact in any order
LAYOUTS: dict[str, str] = {
    "C": f"{_SMALL.format(n=12)}.reshape(3, 4)",
    "rev": f"{_SMALL.format(n=12)}.reshape(3, 4)[::-1, ::-1]",
    "F": f"np.asfortranarray({_SMALL.format(n=12)}.reshape(3, 4))",
    "strided": f"{_SMALL.format(n=24)}.reshape(3, 8)[:, ::2]",
    "T": f"{_SMALL.format(n=12)}.reshape(4, 3).T",
    "empty": "np.zeros((0, 4))",
    "row": f"{_SMALL.format(n=4)}.reshape(1, 4)",
    "1d": f"{_SMALL.format(n=6)}",
    "0d": "np.array(3)",
    "1elem": "np.array([3])",
}
SCALARS = {"pyint": "3", "pyfloat": "2.5", "pybool": "True", "pycomplex": "(1+2j)",
           "npint8": "np.int8(-3)", "npfloat16": "np.float16(2.5)", "npfloat64": "np.float64(-0.5)",
           "0d-f32": "np.array(1.5, np.float32)"}
NDIM = {"0d": 0, "1d": 1, "1elem": 1}


def input_setup(layout: str, dtype: str) -> str:
    """The set-up line(s) making `a` (a view of a base array where the layout is one)."""
    if layout in SCALARS:
        return f"a = {SCALARS[layout]}\n"
    if layout == "nan":
        return (f"a = {LAYOUTS['C']}.astype(np.{dtype})\na[1, 2] = np.nan\n")
    src = LAYOUTS[layout]
    if layout in ("rev", "strided", "T"):   # cast the base, keep the view
        base, view = src.rsplit(")", 1)
        src = f"{base}).astype(np.{dtype}){view}" if dtype != "complex64" else \
            f"({base}) * (1 - 1j)).astype(np.{dtype}){view}"
        return f"a = {src}\n"
    cast = f"({src}).astype(np.{dtype})" if dtype != "complex64" else f"(({src}) * (1 - 1j)).astype(np.complex64)"
    return f"a = {cast}\n"


def ndim_of(layout: str) -> int:
    return 0 if layout in SCALARS else NDIM.get(layout, 2)


# -- calls: each table entry makes the text of one call on `{a}` --------------------

Gen = Callable[[random.Random, int], str]   # (rng, ndim of the input) -> call text with {a}


def _axis(rng: random.Random, nd: int, tuples: bool = True) -> str:
    """An axis argument for an input of `nd` dimensions, now and then a wrong one."""
    forms = ["", "axis=None", "axis=0", "axis=-1"]
    if nd >= 2:
        forms += ["axis=1", "axis=-2"] + (["axis=(0, 1)", "axis=(-1, 0)"] if tuples else [])
    if rng.random() < 0.08:
        forms = [f"axis={nd}", "axis=(0, 0)"]   # NumPy's AxisError / ValueError
    return rng.choice(forms)


_DTYPE_ARGS = ["dtype=np.float32", "dtype=np.int8", "dtype='f8'", "dtype=float", "dtype=np.complex64",
               "dtype=bool", "dtype=np.uint8", "dtype=np.float16"]


@dataclass(frozen=True)
class Reduction:
    name: str
    keepdims: bool = True
    dtype: bool = False
    out: bool = True
    where: bool = False
    ddof: bool = False
    initial: bool = False
    tuple_axis: bool = True
    q: str = ""            # percentile/quantile's q
    method: bool = False   # a method of the array too

    def gen(self, rng: random.Random, nd: int) -> str:
        args = [a for a in [self.q, _axis(rng, nd, self.tuple_axis)] if a]
        if self.keepdims and rng.random() < 0.35:
            args.append(rng.choice(["keepdims=True", "keepdims=False"]))
        if self.dtype and rng.random() < 0.35:
            args.append(rng.choice(_DTYPE_ARGS))
        if self.ddof and rng.random() < 0.5:
            args.append(rng.choice(["ddof=1", "ddof=0", "ddof=2", "correction=1"]))
        if self.initial and rng.random() < 0.3:
            args.append(rng.choice(["initial=0", "initial=10", "initial=-1.5"]))
        if self.where and rng.random() < 0.3:
            args.append(rng.choice(["where={a} != 0", "where=True", "where=np.array(False)"]))
            if self.name in ("min", "max", "amin", "amax") and "initial" not in " ".join(args):
                args.append("initial=5") if rng.random() < 0.8 else None
        if self.q and rng.random() < 0.25:
            args.append(rng.choice(["method='nearest'", "method='lower'", "method='midpoint'"]))
        call = f"({{a}}, {', '.join(args)})" if args else "({a})"
        if self.out and rng.random() < 0.2:   # out=: a fresh array of the result's shape, or the input
            if rng.random() < 0.7:
                return f"np.{self.name}{call[:-1]}, out=np.zeros_like(np.{self.name}{call}))"
            if not (nd == 0 and self.name.startswith("nancum")):   # (NumPy 2.4 crashes: a segfault)
                return f"np.{self.name}{call[:-1]}, out={{a}})"
        if self.method and rng.random() < 0.4:
            return "{a}." + self.name + "(" + ", ".join(args) + ")"
        return f"np.{self.name}{call}"


R = Reduction
REDUCTIONS = [
    R("sum", dtype=True, where=True, initial=True, method=True), R("prod", dtype=True, where=True, initial=True, method=True),
    R("mean", dtype=True, where=True, method=True), R("var", dtype=True, where=True, ddof=True, method=True),
    R("std", dtype=True, where=True, ddof=True, method=True), R("min", where=True, initial=True, method=True),
    R("max", where=True, initial=True, method=True), R("amin", initial=True), R("amax", where=True, initial=True),
    R("nansum", dtype=True, where=True, initial=True), R("nanprod", dtype=True, initial=True),
    R("nanmean", dtype=True, where=True), R("nanvar", dtype=True, ddof=True), R("nanstd", dtype=True, ddof=True, where=True),
    R("nanmin", initial=True), R("nanmax", where=True, initial=True), R("median"), R("nanmedian"),
    R("ptp"), R("average", out=False), R("count_nonzero", out=False),
    R("all", where=True, method=True), R("any", where=True, method=True),
    R("argmax", tuple_axis=False, method=True), R("argmin", tuple_axis=False, method=True),
    R("nanargmax", tuple_axis=False, out=False), R("nanargmin", tuple_axis=False, out=False),
    R("cumsum", keepdims=False, dtype=True, tuple_axis=False, method=True),
    R("cumprod", keepdims=False, dtype=True, tuple_axis=False, method=True),
    R("nancumsum", keepdims=False, dtype=True, tuple_axis=False), R("nancumprod", keepdims=False, dtype=True, tuple_axis=False),
    R("cumulative_sum", keepdims=False, dtype=True, tuple_axis=False),
    R("cumulative_prod", keepdims=False, dtype=True, tuple_axis=False),
    R("percentile", q="30"), R("percentile", q="[10, 90]"), R("quantile", q="0.5"),
    R("nanpercentile", q="75"), R("nanquantile", q="[0.25]"),
]


def _fixed(*calls: str) -> Gen:
    """A generator choosing one of fixed call texts."""
    return lambda rng, nd: rng.choice(calls)


# shape, indexing, sorting, linear algebra, sets, histograms, creation from a template
FUNCTIONS: dict[str, Gen] = {
    "reshape": _fixed("np.reshape({a}, -1)", "np.reshape({a}, (2, -1))", "{a}.reshape(-1, 1, order='F')",
                      "np.reshape({a}, shape=(-1,), order='A')", "{a}.reshape(({a}.size,))", "{a}.reshape(4, 3)"),
    "transpose": _fixed("np.transpose({a})", "np.transpose({a}, (1, 0))", "{a}.transpose()", "np.permute_dims({a})",
                        "{a}.transpose(-1, 0)", "np.matrix_transpose({a})"),
    "moveaxis": _fixed("np.moveaxis({a}, 0, -1)", "np.swapaxes({a}, 0, -1)", "np.rollaxis({a}, 1)",
                       "{a}.swapaxes(-1, -2)", "np.moveaxis({a}, [0, 1], [1, 0])"),
    "squeeze": _fixed("np.squeeze({a})", "np.squeeze({a}, axis=0)", "{a}.squeeze()", "np.expand_dims({a}, (0, -1))",
                      "np.expand_dims({a}, 1)", "{a}[None, ..., np.newaxis]", "np.atleast_3d({a})",
                      "np.atleast_2d({a})", "np.atleast_1d({a}, {a} * 2)"),
    "broadcast": _fixed("np.broadcast_to({a}, (2,) + np.shape({a}))", "np.broadcast_arrays({a}, {a}[..., :1])",
                        "np.broadcast_to({a}, np.shape({a}))", "np.broadcast_shapes(np.shape({a}), (1,))"),
    "ravel": _fixed("np.ravel({a})", "np.ravel({a}, order='K')", "np.ravel({a}, 'F')", "{a}.ravel('A')",
                    "{a}.flatten()", "{a}.flatten('F')", "{a}.flat[::2]", "{a}.flat[1]", "list({a}.flat)"),
    "flip": _fixed("np.flip({a})", "np.flip({a}, -1)", "np.flip({a}, axis=(0, 1))", "np.fliplr({a})", "np.flipud({a})",
                   "np.rot90({a})", "np.rot90({a}, k=-1, axes=(1, 0))", "np.rot90({a}, 2)"),
    "roll": _fixed("np.roll({a}, 2)", "np.roll({a}, -1, axis=0)", "np.roll({a}, (1, 2), axis=(0, -1))",
                   "np.roll({a}, shift=5, axis=-1)"),
    "tile": _fixed("np.tile({a}, 2)", "np.tile({a}, (2, 1))", "np.repeat({a}, 2)", "np.repeat({a}, 2, axis=-1)",
                   "np.repeat({a}, [1, 0, 2], axis=0)", "{a}.repeat(3, axis=0)", "np.resize({a}, (5,))"),
    "join": _fixed("np.concatenate([{a}, {a}])", "np.concatenate(({a}, {a} * 2), axis=-1)",
                   "np.concatenate([{a}, {a}], axis=None)", "np.concatenate([{a}, {a}], dtype=np.float32)",
                   "np.stack([{a}, {a}], axis=-1)", "np.stack(({a}, {a}))", "np.hstack([{a}, {a}])",
                   "np.vstack([{a}, {a}])", "np.dstack([{a}, {a}])", "np.column_stack([{a}, {a}])",
                   "np.block([{a}, {a}])", "np.concat([{a}, 1 + {a}])", "np.append({a}, 1)",
                   "np.append({a}, {a}, axis=0)", "np.concatenate([{a}, {a}.astype(np.float16)])"),
    "split": _fixed("np.split({a}, 2)", "np.split({a}, [1, 2], axis=-1)", "np.array_split({a}, 3, axis=-1)",
                    "np.array_split({a}, 2)", "np.hsplit({a}, 2)", "np.vsplit({a}, [1])", "np.unstack({a})",
                    "np.dsplit({a}, 2)"),
    "pad": _fixed("np.pad({a}, 1)", "np.pad({a}, ((0, 1), (2, 0)), mode='edge')", "np.pad({a}, 1, mode='reflect')",
                  "np.pad({a}, (1, 2), constant_values=9)", "np.pad({a}, 2, mode='wrap')", "np.pad({a}, 1, 'symmetric')"),
    "diff": _fixed("np.diff({a})", "np.diff({a}, n=2, axis=0)", "np.diff({a}, prepend=0)", "np.diff({a}, append={a}[..., -1:])",
                   "np.ediff1d({a})", "np.gradient({a})", "np.gradient({a}, axis=-1)", "np.diff({a}, n=0)"),
    "take": _fixed("np.take({a}, [0, -1])", "np.take({a}, [[0, 1]], axis=-1)", "np.take({a}, 5, mode='wrap')",
                   "np.take({a}, [0, 9], mode='clip', axis=0)", "{a}.take(1)", "np.take({a}, 50)",
                   "np.take_along_axis({a}, np.argsort({a}, axis=-1), axis=-1)",
                   "np.take_along_axis({a}, np.argmax({a}, axis=0, keepdims=True), axis=0)",
                   "np.compress([True, False, True], {a}, axis=0)", "np.extract({a} != 0, {a})",
                   "np.choose(np.zeros(np.shape({a}), int), [{a}])"),
    "where": _fixed("np.where({a})", "np.where({a} != 0, {a}, 0)", "np.where({a} != 0, {a}, 1.5)",
                    "np.where({a} != 0, {a}, np.float64(1.5))", "np.where({a} == 1, 2, {a})",
                    "np.where(True, {a}, -1)", "np.nonzero({a})", "{a}.nonzero()", "np.argwhere({a})",
                    "np.flatnonzero({a})", "np.count_nonzero({a}, axis=0)"),
    "clip": _fixed("np.clip({a}, 0, 1)", "np.clip({a}, None, 1)", "np.clip({a}, -1, None)", "{a}.clip(0, 1)",
                   "np.clip({a}, 0.5, 1.5)", "np.clip({a}, np.int8(0), 300)", "np.clip({a}, [0, 1, 0, 1], 2)",
                   "np.clip({a}, 1, 0)", "np.clip({a}, min=0, max=1)", "np.clip({a})", "np.clip({a}, 0, 1, out={a})",
                   "np.clip({a}, -1, 1, out=np.empty_like({a}))", "{a}.clip(max=0, out={a})"),
    "round": _fixed("np.round({a}, 1)", "np.round({a})", "np.around({a}, -1)", "{a}.round(2)", "np.fix({a})",
                    "np.round({a}, decimals=0)", "np.real_if_close({a})", "np.nan_to_num({a})",
                    "np.nan_to_num({a}, nan=-1.0, posinf=9)", "np.round({a}, 1, out={a})", "{a}.round(out={a})",
                    "np.nan_to_num({a}, copy=False)", "np.around({a}, out=np.zeros_like({a}))"),
    "sort": _fixed("np.sort({a})", "np.sort({a}, axis=None)", "np.sort({a}, axis=0, kind='stable')",
                   "np.argsort({a}, axis=-1, stable=True)", "np.argsort({a}, axis=None)", "np.partition({a}, 1)",
                   "np.argpartition({a}, 0, axis=-1)", "np.sort({a}, descending=False)", "np.lexsort({a})",
                   "np.sort_complex({a})", "np.msort({a})"),
    "unique": _fixed("np.unique({a})", "np.unique({a}, return_counts=True)", "np.unique({a}, axis=0)",
                     "np.unique({a}, return_index=True, return_inverse=True)", "np.unique_values({a})",
                     "np.unique_counts({a})", "np.unique_inverse({a})", "np.unique_all({a})",
                     "np.unique({a}, equal_nan=False)"),
    "sets": _fixed("np.isin({a}, [0, 1])", "np.intersect1d({a}, [0, 1, 5])", "np.union1d({a}, [9])",
                   "np.setdiff1d({a}, [0])", "np.setxor1d({a}, {a})", "np.in1d({a}, [1])",
                   "np.isin({a}, {a}, invert=True)"),
    "search": _fixed("np.searchsorted(np.sort({a}, axis=None), {a})", "np.searchsorted([-1, 0, 1], {a}, side='right')",
                     "np.sort({a}, axis=None).searchsorted(0)", "np.digitize({a}, [0, 1])",
                     "np.digitize({a}, [1, 0], right=True)"),
    "einsum": _fixed("np.einsum('ij->j', {a})", "np.einsum('ij,ij->i', {a}, {a})", "np.einsum('...->...', {a})",
                     "np.einsum('ij->', {a})", "np.einsum('ij,kj->ik', {a}, {a})", "np.einsum({a}, [0, 1], [1, 0])",
                     "np.einsum('i...->...', {a}, optimize=True)", "np.einsum('ii', {a})"),
    "dot": _fixed("np.dot({a}, np.swapaxes({a}, 0, -1))", "{a} @ {a}.T", "np.matmul({a}.T, {a})", "{a}.dot(2)",
                  "np.tensordot({a}, {a}, axes=([1], [1]))", "np.tensordot({a}, {a}, 0)", "np.outer({a}, {a})",
                  "np.inner({a}, {a})", "np.kron({a}, {a})", "np.vdot({a}, {a})", "np.dot({a}, {a})",
                  "np.matmul({a}, {a})", "np.vecdot({a}, {a})", "np.linalg.outer({a}.ravel(), [1, 2])",
                  "np.linalg.matmul({a}, {a}.T)", "np.cross({a}[..., :3], {a}[..., 1:])",
                  "np.matmul({a}, np.swapaxes({a}, 0, -1), out=np.zeros((np.shape({a})[0],) * 2, {a}.dtype))",
                  "np.dot({a}.T, {a}, out=np.empty((np.shape({a})[-1],) * 2))", "np.einsum('ij->i', {a}, out={a}[:, 0])",
                  "np.concatenate([{a}, {a}], out=np.empty((2 * len({a}),) + np.shape({a})[1:], {a}.dtype))",
                  "np.take({a}, [0, 1], out=np.empty(2, {a}.dtype))"),
    "linalg": _fixed("np.linalg.norm({a})", "np.linalg.norm({a}, axis=-1)", "np.linalg.norm({a}, ord=1, axis=0, keepdims=True)",
                     "np.linalg.norm({a}, 'fro')", "np.linalg.norm({a}, np.inf)", "np.linalg.vector_norm({a}, ord=2)",
                     "np.linalg.matrix_norm({a})", "np.trace({a})", "np.trace({a}, 1)", "{a}.trace(dtype=np.int8)",
                     "np.linalg.trace({a})", "np.linalg.diagonal({a})", "np.linalg.det({a} @ {a}.T)",
                     "np.linalg.matrix_rank({a})", "np.linalg.pinv({a})"),
    "diag": _fixed("np.diag({a})", "np.diag({a}, -1)", "np.diagonal({a}, 1)", "{a}.diagonal(offset=-1)",
                   "np.diagflat({a})", "np.tril({a})", "np.triu({a}, -1)", "np.tril({a}, k=1)", "np.fill_diagonal({a}, 7)",
                   "np.diag_indices_from({a})"),
    "grid": _fixed("np.meshgrid({a}.ravel(), {a}.ravel()[:2])", "np.meshgrid({a}, [1, 2], indexing='ij', sparse=True)",
                   "np.ix_([0, 1], {a}.ravel()[:2])", "np.meshgrid({a}.ravel(), copy=False)"),
    "create": _fixed("np.linspace(0, 1, np.size({a}))", "np.arange(np.size({a}))", "np.zeros_like({a})",
                     "np.full_like({a}, 7)", "np.full_like({a}, 2.5, dtype=float)", "np.empty_like({a}).shape",
                     "np.ones_like({a}, order='F')", "np.zeros_like({a}, shape=(2,))", "np.full_like({a}, 300)",
                     "np.linspace({a}, 2 * {a}, 3)", "np.linspace(0, {a}, 2, axis=-1)", "np.geomspace(1, 8, 4) * {a}",
                     "np.full(np.shape({a}), {a})", "np.array({a}, copy=True)", "np.asarray({a}, dtype=np.float32)",
                     "np.copy({a}, order='F')", "np.asfortranarray({a})", "np.ascontiguousarray({a})",
                     "np.require({a}, requirements='F')", "np.astype({a}, np.float32, copy=False)",
                     "np.array({a}, ndmin=3)", "np.asanyarray({a}, order='K')", "np.empty_like({a}, dtype=int).dtype"),
    "compare": _fixed("np.allclose({a}, {a} + 1e-9)", "np.isclose({a}, 0)", "np.array_equal({a}, np.copy({a}))",
                      "np.array_equiv({a}, {a}[:1])", "np.isclose({a}, {a}, equal_nan=True)",
                      "np.allclose({a}, 0, atol=3)", "np.array_equal({a}, {a}, equal_nan=True)"),
    "hist": _fixed("np.histogram({a})", "np.histogram({a}, bins=3, range=(-2, 2))", "np.histogram({a}, bins=[-2, 0, 2], density=True)",
                   "np.bincount(np.abs({a}).ravel().astype(int), minlength=6)", "np.bincount({a}.ravel())",
                   "np.histogram_bin_edges({a}, 'auto')", "np.histogram2d({a}.ravel(), {a}.ravel(), bins=2)",
                   "np.bincount(np.abs({a}).astype(int).ravel(), weights=np.abs({a}).ravel())"),
    "numeric": _fixed("np.interp({a}, [-2, 0, 2], [0, 1, 4])", "np.convolve({a}.ravel(), [1, 2, 1], mode='same')",
                      "np.convolve({a}.ravel(), [1, -1])", "np.correlate({a}.ravel(), [1, 0])",
                      "np.trapezoid({a})", "np.polyval([1, 2], {a})", "np.sinc({a})", "np.i0({a})", "np.unwrap({a})",
                      "np.angle({a})", "np.angle({a}, deg=True)", "np.real({a})", "np.imag({a})", "np.iscomplex({a})",
                      "np.isreal({a})", "np.cov({a})", "np.corrcoef({a})", "np.cumsum({a}) / np.arange(1, np.size({a}) + 1)"),
    "select": _fixed("np.select([{a} > 0, {a} < 0], [{a}, -{a}], default=9)", "np.piecewise({a}, [{a} > 0], [lambda v: v * 2, 0])",
                     "np.apply_along_axis(np.sum, -1, {a})", "np.apply_along_axis(lambda r: r[::-1], 0, {a})",
                     "np.vectorize(lambda v: v * 2)({a})", "np.frompyfunc(lambda v: v + 1, 1, 1)({a})",
                     "np.apply_over_axes(np.sum, {a}, [0])", "np.fromfunction(lambda i: i * 2, (3,), dtype=int) + np.size({a})",
                     "np.select([{a} != 0], [{a}])", "np.piecewise({a}, [{a} < 0, {a} >= 0], [-1, 1])"),
    "insert": _fixed("np.insert({a}, 1, 9, axis=-1)", "np.delete({a}, 0, axis=0)", "np.delete({a}, [0, -1])",
                     "np.insert({a}, 0, {a}[..., 0], axis=-1)", "np.trim_zeros({a}.ravel())", "np.resize({a}, 7)"),
    "bits": _fixed("np.packbits({a})", "np.packbits({a}, axis=-1)", "np.unpackbits({a})", "np.binary_repr(int(np.sum({a})))",
                   "np.base_repr(int(np.max({a})), 3)"),
    "info": _fixed("np.shape({a})", "np.ndim({a})", "np.size({a}, 0)", "np.size({a})", "np.result_type({a}, 1.5)",
                   "np.can_cast({a}, np.int8)", "np.min_scalar_type({a})", "np.iscomplexobj({a})", "np.isfortran({a})",
                   "np.shares_memory({a}, {a}[..., :1])", "np.may_share_memory({a}, np.copy({a}))", "np.isscalar({a})",
                   "np.common_type({a})", "np.iterable({a})", "np.isrealobj({a})"),
    "inplace": _fixed("np.put({a}, [0, 2], [5, 6])", "np.put_along_axis({a}, np.zeros((1, 4), int), 9, axis=0)",
                      "np.copyto({a}, 1)", "np.putmask({a}, {a} != 0, 2)", "np.place({a}, {a} == 1, [7])",
                      "np.copyto({a}, {a}[::-1])", "np.fill_diagonal({a}, 1, wrap=True)"),
}

# ndarray methods and attributes (statements too: in-place methods)
METHODS: list[str] = [
    "{a}.T", "{a}.mT", "{a}.real", "{a}.imag", "{a}.flat[2]", "{a}.item()", "{a}.item(-1)", "{a}.item(0, 1)",
    "{a}.tolist()", "{a}.astype(np.float32, copy=False)", "{a}.astype({a}.dtype, copy=False)",
    "{a}.astype('int8', casting='same_kind')", "{a}.view(np.uint8)", "{a}.view(np.int8)", "{a}.view({a}.dtype)",
    "{a}.view(np.ndarray)", "{a}.fill(3)", "{a}.sort()", "{a}.sort(axis=0)", "{a}.put([0, 2], [5, 6])",
    "{a}.clip(0, 1, out={a})", "{a}.cumsum(axis=0)", "{a}.dot({a}.T)", "{a}.round(1)", "{a}.nonzero()",
    "{a}.any(axis=-1)", "{a}.std(ddof=1)", "{a}.__array__(np.int16)", "{a}.copy('F')",
    "{a}.copy(order='K')", "{a}.byteswap()", "{a}.byteswap().view({a}.dtype.newbyteorder())", "{a}.tobytes()",
    "{a}.tobytes('F')", "len({a})", "[v for v in {a}]", "bool({a})", "{a}.size", "{a}.ndim", "{a}.nbytes",
    "{a}.strides", "{a}.itemsize", "{a}.flags.c_contiguous", "{a}.flags['F_CONTIGUOUS']", "{a}.flags.writeable",
    "{a}.base is None", "{a}.conj()", "{a}.conjugate()", "{a}.squeeze()", "{a}.ravel('F')", "{a}.flatten('K')",
    "{a}.repeat(2)", "{a}.take([0])", "{a}.searchsorted(0)", "{a}.partition(0)", "{a}.argsort()",
    "{a}.prod(dtype=np.int8)", "{a}.mean(keepdims=True)", "{a}.var(ddof=1)", "{a}.ptp()", "{a}.max(initial=9)",
    "{a}.min(axis=0, keepdims=True)", "{a}.argmax(axis=None)", "{a}.argmin(-1, keepdims=True)",
    "{a}.setflags(write=False)", "int({a}.sum())", "float({a}.max())",
    "complex({a}.mean())", "{a}.__len__()", "{a}.__bool__()", "{a}.__float__()", "{a}.__int__()",
    "{a}.__copy__()", "{a}.__deepcopy__({})", "{a}.dtype.kind", "{a}.shape[::-1]",
    "{a}.to_device('cpu')", "{a}.device",
    "{a}.resize((2, 2), refcheck=False)", "{a}.swapaxes(0, -1)", "{a}.all()", "{a}.compress([1, 0, 1], axis=0)",
    "{a}.choose([10, 20, 30])", "{a}.real.base is None", "{a}.sum(axis=0, out=None)", "{a}.diagonal()",
    "{a}.trace()", "{a}[..., 0].copy()", "1 in {a}", "{a}.__getitem__(0)",
    "{a}.cumprod(dtype=np.float16)", "{a}.transpose(*range({a}.ndim)[::-1])", "divmod({a}, 3)",
    "abs({a}).sum(where={a} > 0)", "{a}.reshape(-1).argsort(kind='stable')", "{a}.ctypes is None",
]


# -- the automatic table: NumPy's public callables, probed with argument patterns -----

_DENY = {"test", "info", "show_config", "show_runtime", "save", "savez", "savez_compressed", "savetxt", "load",
         "loadtxt", "genfromtxt", "fromfile", "fromregex", "setbufsize", "set_printoptions", "printoptions",
         "seterr", "seterrcall", "get_include", "bmat", "nested_iters", "busday_count", "busday_offset",
         "is_busday", "datetime_data", "datetime_as_string", "from_dlpack", "fill_diagonal", "getbufsize",
         "geterr", "geterrcall", "get_printoptions", "frombuffer", "fromiter", "fromstring", "memmap",
         "asmatrix", "mask_indices", "empty", "empty_like"}   # (empty: values undefined)
_PATTERNS = ["({a})", "({a}, -1)", "({a}, 1)", "({a}, axis=0)", "({a}, {a})", "({a}, 2, axis=-1)",
             "({a}, {a}, {a})", "([{a}, {a}])", "({a}, 0.5)", "({a}.ravel())"]


def _auto_table() -> list[str]:
    """Call texts of every public callable of np, np.linalg and np.fft that is no ufunc
    and no class, with the (at most two) argument patterns plain NumPy accepts for a 3x4
    float64 array, or the first pattern where it accepts none (its error is a case)."""
    a = np.arange(12.0).reshape(3, 4) % 5 - 2
    out = []
    for prefix, mod in (("np.", np), ("np.linalg.", np.linalg), ("np.fft.", np.fft)):
        for name in sorted(getattr(mod, "__all__", [])):
            f = getattr(mod, name, None)
            if name in _DENY or not callable(f) or isinstance(f, (np.ufunc, type)):
                continue
            ok = [p for p in _PATTERNS if _accepts(f, p, a)][:2]
            out += [prefix + name + p for p in (ok or _PATTERNS[:1])]
    return out


def _accepts(f: Callable, pattern: str, a: np.ndarray) -> bool:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            eval("f" + pattern.replace("{a}", "a.copy()"), {"f": f, "a": a, "np": np})
        except Exception:
            return False
    return True


AUTO = _auto_table()


# -- surroundings: where the call sits in the cell ----------------------------------

_TRACED_INPUTS = ["{a} * 2 + 1", "{a} + {a}", "{a}[::-1]", "-{a} if np.ndim({a}) else {a} * 1", "({a} != 0) * {a}"]
_POST = "u = r * 2 if isinstance(r, np.ndarray) and r.dtype != object else r\n"
CONTEXTS = ["alone", "traced", "write after", "write before", "printed", "displayed", "caught", "statement",
            "result written"]


def in_context(call: str, ctx: str, rng: random.Random) -> str:
    """The cell placing `call` (text with {a}) in the surroundings `ctx`."""
    on_a = call.replace("{a}", "a")
    if ctx == "alone":
        return f"r = {on_a}\n"
    if ctx == "traced":
        t = rng.choice(_TRACED_INPUTS).replace("{a}", "a")
        return f"t = {t}\nr = {call.replace('{a}', 't')}\n" + _POST
    if ctx == "write after":   # the result may be a view of `a`: it sees the write, as in NumPy
        return f"v = {on_a}\na[...] = 1\nw = v * 1 if isinstance(v, np.ndarray) and v.dtype != object else v\n"
    if ctx == "write before":
        return f"a[...] = a[::-1] if np.ndim(a) else a\nr = {on_a}\n" + _POST
    if ctx == "printed":
        return f"t = a * 1\nprint({call.replace('{a}', 't')})\n"
    if ctx == "displayed":
        return f"{on_a}\n"
    if ctx == "caught":
        return (f"try:\n    r = {on_a}\nexcept Exception as ex:\n    r = None\n    err = (type(ex).__name__, str(ex))\n"
                f"s = a * 2\n")
    if ctx == "result written":   # a write through a result that may view `a` shows in `a`, as in NumPy
        return (f"r = {on_a}\nif isinstance(r, np.ndarray) and r.dtype != object and r.flags.writeable:\n"
                f"    r[...] = 1\ns = a * 1\n")
    return f"{on_a}\nr = a * 1\n"   # an expression statement, then `a` read (in-place calls)


# -- generation ---------------------------------------------------------------------

_INPUT_KINDS = list(LAYOUTS) + ["nan"] + list(SCALARS)


def _input(rng: random.Random) -> tuple[str, str]:
    layout = rng.choice(_INPUT_KINDS) if rng.random() < 0.5 else "C"
    if layout == "nan":
        return layout, rng.choice(["float16", "float32", "float64", "complex64"])
    return layout, rng.choice(DTYPES)


def _call(rng: random.Random, nd: int) -> tuple[str, str]:
    """(family, call text) of one random call."""
    family = rng.choices(["reduction", "function", "method", "auto"], weights=[3, 4, 2, 2])[0]
    if family == "reduction":
        red = rng.choice(REDUCTIONS)
        return red.name, red.gen(rng, nd)
    if family == "function":
        name = rng.choice(sorted(FUNCTIONS))
        return name, FUNCTIONS[name](rng, nd)
    if family == "method":
        return "method", rng.choice(METHODS)
    return "auto", rng.choice(AUTO)


# views in another dtype: an update of the array they view is refused while they live
_VIEWS_REFUSED = (".view(np.", ".getfield(")


def generate(n: int, seed: int = SEED) -> list[Case]:
    """`n` cells, the same ones for a seed."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        layout, dtype = _input(rng)
        family, call = _call(rng, ndim_of(layout))
        ctx = rng.choice(CONTEXTS)
        if ctx == "write after" and any(k in call for k in _VIEWS_REFUSED):
            ctx = "alone"   # (a known limit: LIMITS' "getfield then write")
        cell = in_context(call, ctx, rng)
        name = f"{i:05d}-{family}-{layout}-{dtype if layout not in SCALARS else ''}-{ctx}"
        cases.append(Case(name, cell, setup=input_setup(layout, dtype), tol=_tol(call)))
    return cases


_INEXACT = ("mean", "var", "std", "average", "percentile", "quantile", "median", "norm", "einsum", "dot", "matmul",
            "@", "tensordot", "inner", "outer", "kron", "cov", "corrcoef", "interp", "gradient", "linalg", "fft",
            "histogram", "trapezoid", "convolve", "correlate", "vdot", "vecdot")


def _tol(call: str) -> str:
    """Reductions whose additions round differ with their order (NumPy's pairwise sums)."""
    return "reduction order" if any(k in call for k in _INEXACT) else ""


CASES = generate(N_CELLS)
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=KNOWN[c.name]))
                                  if c.name in KNOWN else pytest.param(c, id=c.name) for c in CASES])
def test_generated_api_cell_as_plain_execution(harness, case):
    assert_as_plain(harness, case, SETUP)


# -- regressions: one cell for each class of difference the sweep found --------------

REGRESSIONS = [
    # np.ascontiguousarray's result has at least one dimension: of a 0-d value, (1,)
    Case("ascontiguousarray of 0-d", "r = np.ascontiguousarray(a.sum())\nt = a * 1\nprint(np.ascontiguousarray(t[0]))\n"
         "u = np.ascontiguousarray(np.float32(2.5) * a[0])", setup="a = np.arange(4.0, dtype=np.float32)\n"),
    # a library's warning with stacklevel=2 from a call fuselab made in the user's place
    Case("untraced call's warning", "np.cov(a)\nr = a * 1", setup="a = np.float64(-0.5)\n"),
    Case("nanvar of a constant array", "r = np.nanvar(np.array(3 + 3j), ddof=1)"),
    Case("method keywords", "try:\n    r = a.std(axis=1, correction=1)\nexcept TypeError as ex:\n    err = str(ex)\n"
         "s = np.std(a, axis=1, correction=1)", setup="a = np.arange(6.0).reshape(2, 3)\n"),
    Case("mT of 0-d", "try:\n    r = a.mT\nexcept ValueError as ex:\n    err = str(ex)\n"
         "try:\n    s = (a * 2).mT\nexcept AttributeError as ex:\n    err2 = str(ex)", setup="a = np.array(1.5)\n"),
    Case("place into itself", "np.place(a, a > 0, a)\nr = a * 1", setup="a = np.arange(-3, 9).astype(np.int8)\n"),
    # ...but a target that is not C-contiguous NumPy writes through a copy, reading its
    # values from another taken first
    Case("place into itself, transposed", "np.place(a, a > 0, a)\nr = a * 1",
         setup="a = (np.arange(12).reshape(4, 3) % 5 - 2).astype(np.int8).T\n"),
    Case("place into itself, strided", "np.place(a, a > 0, a)\nr = a * 1",
         setup="a = np.arange(-3, 9).astype(np.int8)[::2]\n"),
    Case("argwhere's layout", "v = np.argwhere(a)\nw = v * 1", setup="a = np.arange(12.0).reshape(3, 4) % 5\n"),
    Case("bound method run for real", "v = a.dump\nw = (a * 2).tobytes\nr = w()", setup="a = np.arange(4.0)\n"),
    Case("conj of a real array", "r = a.conj()\ns = (a * 2).conjugate()\na[0] = 9\nt = r * 1\nq = s is not a",
         setup="a = np.arange(4.0)\n"),
    Case("broadcast_to its own shape", "r = np.broadcast_to(a, (4,))\ns = np.broadcast_to(a * 2, a.shape)\n"
         "try:\n    s[0] = 1\nexcept ValueError as ex:\n    err = str(ex)", setup="a = np.arange(4.0)\n"),
    Case("unique's named tuples", "r = np.unique_all(a * 1)\nc = np.unique_counts(a)\nprint(c)\nv = r.values + 1\n"
         "np.unique_inverse(a)", setup="a = np.arange(12) % 5\n"),
    Case("fft of a list, float16", "r = np.fft.fft2([a, a * 2])\ns = np.fft.irfft2(a.astype(np.float16))\n"
         "t = np.fft.irfft(a[0].astype(np.float16))", setup="a = np.arange(12.0).reshape(3, 4)\n"),
    Case("cumulative_* arguments", "try:\n    r = np.cumulative_prod(a * 1, dtype=float)\nexcept ValueError as ex:\n"
         "    err = str(ex)\ns = np.cumulative_sum(a * 2, axis=1, include_initial=True)\nprint(s.shape)\n"
         "t = np.cumulative_sum(a[0] * 2, include_initial=True) + 1", setup="a = np.arange(12.0).reshape(3, 4)\n"),
    Case("tril of 0-d", "try:\n    r = np.tril(a * 2)\nexcept TypeError as ex:\n    err = str(ex)", setup="a = np.array(1.5)\n"),
    Case("complex reduced into a real dtype", "r = np.sum(a, dtype=np.float32)\ns = a.cumprod(dtype=np.float16)\n"
         "t = np.add.reduce(a, dtype=np.float64)\nq = a.sum(axis=0, dtype=np.int8)",
         setup="a = (np.arange(6.0) * (1 - 1j)).reshape(2, 3)\n"),
    Case("Fortran cumsum then arithmetic", "r = np.cumsum(a, -1)\nu = r * 2\ns = np.nancumsum(a * 1, axis=0)\n"
         "v = s + 1\nw = np.roll(a, 1) + 1\nz = np.sort(a) - 1",
         setup="a = np.asfortranarray(np.arange(12.0).reshape(3, 4))\n"),
    Case("full_like out of range", "try:\n    r = np.full_like(a, 300)\nexcept OverflowError as ex:\n    err = str(ex)\n"
         "s = np.full_like(a * 2, 300, dtype=np.int16)", setup="a = np.arange(4).astype(np.int8)\n"),
    Case("trim_zeros is a view", "r = np.trim_zeros(a)\na[3] = 7\ns = r * 1\nt = np.trim_zeros(a * 2)",
         setup="a = np.arange(6.0) % 5 - 2\n"),
    Case("views of a list's array", "r = np.ravel([a, a])\nt = a * 2 + 1\ns = np.permute_dims([t, t])\nu = s * 2\n"
         "q = np.swapaxes([a, a], 0, 1) * 1", setup="a = np.arange(4.0).reshape(1, 4)\n"),
    Case("__array__ in a dtype", "v = a.__array__(np.float32)\nw = (a * 2).__array__(np.int8)",
         setup="a = np.arange(12.0).reshape(4, 3).T\n"),
    Case("round of a 0-d integer array", "r = np.round(a, 1)\ns = a.round()\nt = np.round(a * 2)",
         setup="a = np.array(3, np.int8)\n"),
    Case("std into an integer dtype", "r = np.std(a, dtype=np.uint8, correction=1)\ns = a.std(dtype=np.int16)\n"
         "try:\n    t = np.std(a * 2, axis=0, dtype=np.int8)\nexcept TypeError as ex:\n    err = type(ex).__name__",
         setup="a = np.arange(12.0).reshape(3, 4) % 5\n"),
    Case("length-1 axes' strides", "v = a.min(axis=0, keepdims=True)\nw = v * 1\nq = a.sum(axis=1, keepdims=True) + 1",
         setup="a = (np.arange(12) % 5 - 2).reshape(4, 3).astype(np.float16).T\n"),
    Case("writes through a real run's views", "r = np.trim_zeros(a.ravel())\nr[...] = 1\ns = np.split(a[::1], 3)\n"
         "s[0][...] = 7\nt = a.copy()\nq = np.split(t, 3)\nq[1][...] = 5\nd = np.diag(t)\nt[2] = 9\nz = d * 1",
         setup="a = np.array([3.0, 0.0, 2.0])\n"),
    Case("median's own memory", "r = np.nanmedian(a, axis=0)\ns = np.median(a, axis=-1, keepdims=True)\n"
         "t = np.median(a, 0)\nu = np.nanmedian(a * 2, -1)", setup="a = np.arange(12.0).reshape(3, 4)\n"),
    Case("concatenate's layout", "v = np.concatenate((a, a * 2), axis=-1)\na[...] = 1\nw = v * 1\n"
         "q = np.concatenate((np.ones((3, 4)), a), axis=1) + 1",
         setup="a = (np.arange(12) % 5 - 2).reshape(4, 3).astype(np.float64).T\n"),
    Case("warnings of a real run that raised", "try:\n    r = np.mean(a, dtype=np.uint8, where=np.array(False), out=a)\n"
         "except Exception as ex:\n    err = type(ex).__name__\ns = a * 2", setup="a = np.arange(12.0).reshape(3, 4)\n"),
    Case("a view of a user's view, run for real", "t = a[::-1]\ntry:\n    r = t.view(np.uint8)\nexcept ValueError as ex:\n"
         "    err = str(ex)\nq = np.split(a[1:], 2, axis=1)\nq[0][...] = 7",
         setup="a = (np.arange(12) % 5 - 2).reshape(3, 4).astype(np.float64)[::-1, ::-1]\n"),
    Case("imag of a real array's layout", "r = a.imag\ns = a[::-1].imag\nt = (c.real.T).imag",
         setup="a = np.arange(12.0).reshape(4, 3).T\nc = (np.arange(12.0) * (1 - 1j)).reshape(3, 4)\n"),
    Case("flags of an updated input", "a[...] = a[::-1]\nr = a.flags['F_CONTIGUOUS']\ns = a.flags.c_contiguous",
         setup="a = np.arange(12.0).reshape(4, 3).T\n"),
    Case("complex into bool: no warning", "r = a.astype(bool)\ns = a.prod(axis=None, keepdims=True, dtype=bool)\n"
         "t = np.sum(a * 2, dtype=bool)", setup="a = (np.arange(12.0) * (1 - 1j)).reshape(3, 4)\n"),
    Case("arange of NumPy scalars", "r = np.arange(a)\ns = np.arange(np.int8(1), np.int16(4))\nt = np.arange(True)",
         setup="a = np.float16(2.5)\n"),
    Case("copyto into a NumPy scalar", "t = a * 1\ntry:\n    np.copyto(t, 1)\nexcept TypeError as ex:\n    err = str(ex)",
         setup="a = np.array(1.5, np.float32)\n"),
    Case("diff n=0 is the array", "r = np.diff(a, n=0)\nt = a * 2\ns = np.diff(t, 0)\nt[0] = 100",
         setup="a = np.arange(6.0)\n"),
    # a known limit until the opaque functions' floating-point warnings took NumPy's words
    # (NumPy: "invalid value encountered in cast", not "in accumulate")
    Case("cumsum's cast warning", "r = np.cumsum(a, axis=0, dtype=np.int8)",
         setup="a = np.arange(12.0).reshape(3, 4)\na[1, 2] = np.nan\n"),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c.name for c in REGRESSIONS])
def test_api_sweep_regression(harness, case):
    assert_as_plain(harness, case, SETUP)


# -- known limitations (strict xfails), out of the generator's tables -----------------

LIMITS = [
    (Case("__array_priority__", "r = (a * 2).__array_priority__", setup="a = np.arange(4.0)\n"),
     "the tracer's class attribute (1000) wins operator dispatch against ndarray and cupy.ndarray, "
     "which read it on the instance: it cannot be NumPy's 0.0 there"),
    (Case("__array_interface__", "r = (a * 2).__array_interface__['shape']", setup="a = np.arange(4.0)\n"),
     "np.asarray reads __array_interface__ of any object: a tracer answering it would be converted "
     "silently, so it is an AttributeError"),
    (Case("__array__ is the array", "r = a.__array__()\nsame = r is a", setup="a = np.arange(4.0)\n"),
     "NumPy's protocol calls __array__ too: the tracer gives a read-only view of its value, never the "
     "user's writeable array, so `a.__array__() is a` is False"),
    (Case("scalar dunder", "t = a.sum()\ntry:\n    r = t.__index__()\nexcept Exception as ex:\n"
          "    err = type(ex).__name__", setup="a = np.arange(4.0)\n"),
     "a traced NumPy scalar has the array's methods: `np.float64(1).__index__` is AttributeError, "
     "the tracer's raises TypeError"),
    (Case("broadcast_to's length-1 strides", "r = np.broadcast_to(a, a.shape)", setup="a = np.arange(4.0).reshape(1, 4)\n"),
     "NumPy's broadcast_to gives a length-1 axis stride 0; to the array's own shape the graph has no "
     "broadcast node, and the view is bound with the array's strides (values and flags are NumPy's)"),
    (Case("getfield then write", "v = a.getfield(np.int8)\na[...] = 1", setup="a = np.arange(4.0)\n"),
     "an update of an array while a view of it in another dtype lives is refused (redteam2)"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=r))
                                  for c, r in LIMITS])
def test_api_sweep_known_limit(harness, case):
    assert_as_plain(harness, case, SETUP)
