"""The differential fuzzer's generated cells (tests/fuzz) on Dask arrays: each input
chunked at random (irregular chunks, blocks of one row, empty axes), the cell run under
`%%fuse` as a user would (traced from the Dask arrays' shapes, planned, each kernel run
per block, partial reductions combined in Dask's tree), every result computed and judged
against NumPy's value on the same data within the bound the generator derived (bit for
bit on exact paths). A cell plain Dask refuses must fail under `%%fuse` too.

What the first runs of this found, and fixed:

- a row kernel's block of one row (chunks of one row) failed in codegen ("a row kernel
  needs at least two rows"): a block can be degenerate where the whole array is not; its
  program is now planned as any graph is (dask/program.py `_Programs.get`);
- argmax / argmin over an axis whose blocks are empty along another axis raised in the
  combine (`reshape(..., -1)` beside a 0-length axis: dask/states.py `_fold_arg`);
- a 0-d value stored by a kernel whose blocks span other axes (`t = s > 0` of a 0-d `s`
  next to `y = np.where(t, s, x)`) failed to unpack the blocks' lists: every block
  computed the same value (dask/execute.py `_unwrap`);
- `np.array(x)`, `np.asarray(x[, dtype])`, `np.copy(x)`, `np.ascontiguousarray(x)` of a
  Dask array gave a lazy Dask array, or failed: plain code gets a NumPy array (NumPy
  computes it); `x.copy()`, `x.flatten()` failed binding a Dask copy with NumPy's
  order= (trace/creation.py `_dask_lazy`, trace/bind.py `_derivable_from`);
- NumPy's order= given to a Dask array's copy(), flatten(), ravel(), reshape() (or
  np.ravel) was taken (a Fortran-order result): Dask's methods take no order, and plain
  code raises Dask's TypeError at the line (trace/methods.py, trace/shapes.py);
- a reduction kernel's stored value of another shape than the reduced input (one of
  the result's shape, `v = x0 ^ x0` beside `x.max(axis=(1, 2), keepdims=True)`; one
  of the input's with unit axes added, `x[..., None].all(axis=2)` beside `x ** 2`; one
  broadcast against the result, `np.where(m, m.astype(int), y.prod(axis=2))`) had
  block labels the kernel's space did not know: Dask's "Unknown dimension"
  (dask/layout.py `_line_up_reduction_values`);
- a held 0-d NumPy array (another object holds it) beside a Dask array in the namespace:
  a view's read asked its `__class__` inside the held-array check, which read it again,
  without end (RecursionError; trace/core.py `view_root`).

FUSELAB_DASK_FUZZ_PROGRAMS (default 40) and FUSELAB_DASK_FUZZ_SEED choose the run.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

from fuselab.cell import run_cell  # noqa: E402
from fuzz.generator import generate  # noqa: E402
from fuzz.numerics import compare  # noqa: E402

PROGRAMS = int(os.environ.get("FUSELAB_DASK_FUZZ_PROGRAMS", "40"))
SEED = int(os.environ.get("FUSELAB_DASK_FUZZ_SEED", "0"))


def random_chunks(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Irregular chunks, up to four blocks an axis (blocks of one element included)."""
    out = []
    for n in shape:
        if n <= 1:
            out.append((n,))
            continue
        k = int(rng.integers(1, min(n, 4) + 1))
        cuts = sorted({int(c) for c in rng.integers(1, n, k - 1)}) if k > 1 else []
        out.append(tuple(b - a for a, b in zip([0, *cuts], [*cuts, n])))
    return tuple(out)


def dask_namespace(inputs: dict, seed: int) -> dict:
    """The program's inputs as Dask arrays (0-d ones stay NumPy's, as a user's scalars)."""
    rng = np.random.default_rng(seed + 99)
    ns: dict = {"np": np}
    for name, v in inputs.items():
        v = np.asarray(v)
        ns[name] = da.from_array(v, chunks=random_chunks(rng, v.shape)) if v.ndim else v
    return ns


def _plain_error(source: str, ns: dict) -> str | None:
    plain = dict(ns)
    try:
        exec(source, plain)
        dask.compute(*[v for v in plain.values() if isinstance(v, da.Array)])
    except Exception as e:  # noqa: BLE001 - plain Dask's refusal, whatever it is
        return f"{type(e).__name__}: {e}"
    return None


def failures_of(seed: int) -> list[str]:
    program = generate(seed)
    ns = dask_namespace(program.inputs, seed)
    with warnings.catch_warnings(), dask.config.set(scheduler="sync"):
        warnings.simplefilter("ignore")
        refused = _plain_error(program.source, ns)
        try:
            run_cell(ns, program.source, quiet=True, time=False)
            got = {k: ns[k] for k in program.values if k in ns}
            got = dict(zip(got, dask.compute(*got.values())))
        except Exception as e:  # noqa: BLE001 - the failure is the finding
            return [] if refused else [f"raised {type(e).__name__}: {e}"]
    if refused:
        return [f"plain Dask refuses the cell ({refused[:200]}), %%fuse ran it"]
    out = []
    for name, value in got.items():
        want = program.values[name]
        verdict = compare(name, np.asarray(value), want.arr, want.bound, want.any_zero_sign)
        if not verdict.ok:
            out.append(verdict.message)
    return out


@pytest.mark.slow
def test_generated_cells_on_dask_arrays_match_numpy():
    bad = []
    for seed in range(SEED, SEED + PROGRAMS):
        f = failures_of(seed)
        if f:
            bad.append(f"seed {seed}:\n{generate(seed).source}\n" + "\n".join(f)[:1500])
    assert not bad, "\n\n".join(bad[:5])


@pytest.mark.parametrize("seed", [15, 38, 73, 200, 269, 321, 998, 1086, 1110, 1132, 1663])
def test_cells_the_first_runs_found(seed):
    """The seeds whose cells found the failures above (with the same chunks)."""
    assert failures_of(seed) == []


ORDER_CELLS = ["y = x.flatten('F')", "y = x.ravel('F')", "y = x.reshape(12, order='F')",
               "y = np.ravel(x, order='F')", "y = x.copy(order='F')",
               "try:\n    y = x.ravel('F')\nexcept TypeError as e:\n    y = str(e)"]


@pytest.mark.parametrize("cell", ORDER_CELLS)
def test_numpys_order_on_a_dask_array_is_dasks_error(cell):
    def fresh() -> dict:
        return {"np": np, "x": da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)}
    plain, fused = fresh(), fresh()
    try:
        exec(cell, plain)
        want = plain["y"]
    except TypeError as e:
        want = e
    try:
        run_cell(fused, cell, quiet=True, time=False)
        got = fused["y"]
    except Exception as e:  # noqa: BLE001
        got = e
    if isinstance(want, TypeError):
        assert not isinstance(got, da.Array) and str(want) in str(got)
    else:
        assert got == want


def test_the_judge_sees_a_wrong_block():
    """The comparison can fail: a result off in one block is caught."""
    program = generate(3)
    name, want = next(iter(program.values.items()))
    wrong = np.array(want.arr, copy=True)
    if wrong.size == 0:
        pytest.skip("an empty result")
    flat = wrong.reshape(-1)
    v = flat[-1]
    if wrong.dtype.kind == "b":
        flat[-1] = not v
    elif wrong.dtype.kind == "f":
        flat[-1] = v + max(1.0, abs(float(v))) if np.isfinite(v) else 0.0
    else:
        flat[-1] = v + 1 if v < np.iinfo(wrong.dtype).max else v - 1
    assert not compare(name, wrong, want.arr, want.bound, want.any_zero_sign).ok
