"""Fidelity: every corpus cell, run plainly and under `%%fuse` in IPython from the same
set-up, leaves the notebook in the same state — names, types, dtypes, shapes, values,
which names are (or share memory with) which arrays, Out[n], printed text and warnings —
except new intermediates that were fused away (and are listed). A cell that raises under
plain Python raises under %%fuse too, with the namespace untouched and no internal frames.

The same corpus runs with CuPy arrays on a GPU (marked gpu)."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Harness, assert_as_plain, differences  # noqa: E402
from fidelity_corpus import SETUP, cases  # noqa: E402
from fidelity_random import random_cell  # noqa: E402

CASES = cases()
# random cells grown from the corpus's situations (fidelity_random.py); FIDELITY_RANDOM=N
# runs more (long runs: `FIDELITY_RANDOM=2000 pytest tests/test_fidelity.py -k random`)
# (FIDELITY_RANDOM_FROM=S starts at seed S: a long run past the seeds already tried)
RANDOM_SEEDS = range(int(os.environ.get("FIDELITY_RANDOM_FROM", "0")),
                     int(os.environ.get("FIDELITY_RANDOM_FROM", "0")) + int(os.environ.get("FIDELITY_RANDOM", "80")))


@pytest.fixture(scope="module")
def harness():
    return Harness()


def _check(harness, case, setup, fuse_line=FUSE_LINE, reduction_rtol=None):
    assert_as_plain(harness, case, setup, fuse_line, reduction_rtol)


def test_corpus_is_large_and_varied():
    assert len(CASES) >= 300
    assert len({c.cell for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fused_cell_leaves_the_notebook_as_plain_execution(harness, case):
    _check(harness, case, SETUP)


CUPY_SETUP = SETUP.replace("import numpy as np\n", "import numpy\nimport cupy as np\n") \
    .replace(".astype('>f4')", "")


@pytest.mark.gpu
@pytest.mark.parametrize("case", [c for c in CASES if not c.numpy_only], ids=lambda c: c.name)
def test_fused_cell_with_cupy_arrays(harness, case):
    from fuselab.runtime.verify import RTOL
    _check(harness, case, CUPY_SETUP, FUSE_LINE.replace(" --backend cpu", ""), RTOL)


def test_printed_numbers_compare_within_the_reduction_tolerance_only_where_one_applies():
    """With CuPy the fused kernels sum in another order than CuPy's own: the values agree
    to the documented tolerance (verify.RTOL), and so must the numbers printed or shown as
    Out[n]; every other character, and integers, must be the same."""
    from fidelity import same_text_within
    rtol = {np.dtype(np.float16): 4e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}
    assert same_text_within("Out[n]: array(0.48649982, dtype=float32)\n",
                            "Out[n]: array(0.4864998, dtype=float32)\n", rtol)
    assert same_text_within("0.48649982\n", "0.4864998\n", rtol)       # float32 text, no dtype shown
    assert not same_text_within("0.48649982\n", "0.4865\n", rtol)
    assert not same_text_within("0.5\n", "0.501\n", rtol)              # float64's tolerance
    assert not same_text_within("array(0.5, dtype=float32)", "array(0.5, dtype=float64)", rtol)
    assert not same_text_within("k 3\n", "k 4\n", rtol)                # integers exactly
    assert not same_text_within("a 1.0\n", "b 1.0\n", rtol)
    assert not same_text_within("0.48649982\n", "0.4864998\n", 0.0)    # no tolerance: exact
    # a sum that cancels to rounding residue, judged at the corpora's unit scale (random
    # cell 234625: `(m - m.mean()).sum()` printed 6.66e-16 plainly, -9.99e-16 fused)
    assert same_text_within("np.float64(6.661338147750939e-16)\n", "np.float64(-9.992007221626409e-16)\n", rtol)
    assert not same_text_within("np.float64(6.7e-12)\n", "np.float64(-9.9e-12)\n", rtol)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_cell_leaves_the_notebook_as_plain_execution(harness, seed):
    _check(harness, random_cell(seed), SETUP)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_cell_with_cupy_arrays(harness, seed):
    from fuselab.runtime.verify import RTOL
    _check(harness, random_cell(seed), CUPY_SETUP, FUSE_LINE.replace(" --backend cpu", ""), RTOL)


NUMBA_CASES = ["untraced function warns between traced ones", "warning from an untraced function",
               "float16 variance steps warn from NumPy's lines",
               "plain NumPy during the trace warns after the lines above", "small warnings before a break"]


@pytest.mark.parametrize("name", NUMBA_CASES)
def test_warning_cells_through_the_numba_backend(harness, name):
    """The Numba backend leaves these cells as plain execution does: an untraced
    function's own warnings (np.nanmedian's "All-NaN slice") once, at the user's line, in
    their place (its kernels' runs and the measurement's reference runs keep theirs to
    themselves), and a float16 variance whose squared deviations overflow is inf."""
    pytest.importorskip("numba", reason="the Numba backend needs numba (pip install '.[cpu]')")
    case = next(c for c in CASES if c.name == name)
    _check(harness, case, SETUP, FUSE_LINE.replace("--backend cpu", "--backend numba"))


# The corpus and random cells through the Numba backend, which compiles its own kernels:
# its float32 exp/expm1/tanh are its own (within 1 ulp), its log/sin glibc's, NumPy's
# SIMD loops within a few ulp (float64 tanh: libm's against NumPy's), and its sums add in
# blocks, so float values may differ by this much. A representative part in CI (every
# 8th corpus cell, 24 random cells); FIDELITY_NUMBA_ALL=1 runs the whole corpus and
# FIDELITY_RANDOM cells.
NUMBA_RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-13}
_NUMBA_ALL = os.environ.get("FIDELITY_NUMBA_ALL", "") == "1"
NUMBA_CORPUS = CASES if _NUMBA_ALL else CASES[::8]
NUMBA_SEEDS = RANDOM_SEEDS if _NUMBA_ALL else range(RANDOM_SEEDS.start, RANDOM_SEEDS.start + 24)


@pytest.mark.parametrize("case", NUMBA_CORPUS, ids=[c.name for c in NUMBA_CORPUS])
def test_corpus_cell_through_the_numba_backend(harness, case):
    pytest.importorskip("numba", reason="the Numba backend needs numba (pip install '.[cpu]')")
    _check(harness, case, SETUP, FUSE_LINE.replace("--backend cpu", "--backend numba"), NUMBA_RTOL)


@pytest.mark.parametrize("seed", NUMBA_SEEDS)
def test_random_cell_through_the_numba_backend(harness, seed):
    pytest.importorskip("numba", reason="the Numba backend needs numba (pip install '.[cpu]')")
    _check(harness, random_cell(seed), SETUP, FUSE_LINE.replace("--backend cpu", "--backend numba"), NUMBA_RTOL)
