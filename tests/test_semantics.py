"""Golden tests for the traced semantics of issue #10: places where fuselab once had its
own reading of NumPy's rules. The reference interpreter agreed with that reading, so only
NumPy itself can tell: every case runs plainly and through %%fuse's CPU backend, and the
results must be NumPy's exactly (type, dtype, shape and every bit)."""
from __future__ import annotations

import numpy as np
import pytest

from fuselab.cell import run_cell


def namespace():
    rng = np.random.default_rng(7)
    return {
        "np": np,
        "f": (rng.standard_normal((5, 7)) * 40).astype(np.float32),
        "d": rng.standard_normal(9) * 1e3,
        "h": (rng.standard_normal(3001) * 4).astype(np.float16),   # a count float16 cannot hold
        "h2": (rng.standard_normal((6, 5)) * 4).astype(np.float16),
        "i8": rng.integers(-128, 127, 11).astype(np.int8),
        "u8": rng.integers(0, 255, 11).astype(np.uint8),
        "i32": rng.integers(-10_000, 10_000, 11).astype(np.int32),
        "b": rng.random(11) > 0.5,
    }


CASES = [
    # mean with an integer, unsigned or bool dtype: NumPy returns that dtype
    "y = f.mean(dtype=int)", "y = f.mean(axis=0, dtype=int)", "y = d.mean(dtype=np.uint8)",
    "y = b.mean(dtype=bool)", "y = i32.mean(dtype=np.int16)", "y = i8.mean()", "y = u8.mean(dtype=np.float32)",
    # np.round of integers keeps the dtype; negative decimals round them
    "y = np.round(i32, -1)", "y = np.round(i32, -2)", "y = np.round(u8, -1)", "y = np.round(i8)",
    "y = np.round(i32, 2)", "y = np.round(f, 1)", "y = np.round(f, -1)", "y = np.round(h2, 2)",
    # float16 var / std / mean stay in float16 where NumPy does, with NumPy's divisions
    "y = h.var()", "y = h.std()", "y = h.var(ddof=1)", "y = h.mean()", "y = h2.var(axis=0)",
    "y = h2.std(axis=1, keepdims=True)", "y = h2.mean(axis=0)", "y = h.var(dtype=np.float32)",
    "y = f.var()", "y = f.std(axis=1)", "y = i8.var()", "y = d.std(ddof=2)",
    # the ** operator's fast paths: bool ** 2 is np.square (int8)
    "y = b ** 2", "y = b ** 3", "y = i8 ** 2", "y = f ** 0.5", "y = i8 ** 0.5", "y = f ** -1", "y = b ** True",
    "y = np.power(b, 2)", "y = f ** 1",
    # np.clip is one ufunc over its three operands (NEP 50), out-of-range Python ints dropped
    "y = np.clip(i8, 0, 1.5)", "y = np.clip(u8, -3, 7)", "y = np.clip(f, np.float64(0), 2)",
    "y = np.clip(i8, -1000, 1000)", "y = np.clip(u8, None, 300)", "y = np.clip(u8, 3, None)",
    "y = np.clip(f, -1, 1)", "y = f.clip(0)", "y = np.clip(i32, np.int8(-3), 7)",
    # comparisons with Python integers outside the dtype are exact
    "y = u8 > -2", "y = u8 == 300", "y = u8 != 300", "y = -1 < u8", "y = i8 >= 200", "y = i8 < -129",
    "y = u8 <= 2 ** 70",
    # count_nonzero, norm, where and astype of weak scalars
    "y = np.count_nonzero(f > 0)", "y = np.count_nonzero(f, axis=0)", "y = np.count_nonzero(b, keepdims=True)",
    "y = np.linalg.norm(h2, axis=1)", "y = np.linalg.norm(i8.reshape(1, -1), axis=1)",
    "y = np.linalg.norm(f, ord=1, axis=0)", "y = np.linalg.norm(f, ord=np.inf, axis=1)",
    "y = np.where(b, u8, 300)", "y = np.where(b, i8, 1.5)", "y = np.where(b, 1, 2.5)",
    "y = np.where(b, f[0, :1], 2.0)", "y = np.where(b, f[0, :1], np.float64(2))", "y = np.where(b, True, 0)",
    "y = np.float32(2.5).astype(np.int8) + i8", "y = (f > 0).astype(np.uint8) * 255", "y = u8.astype(np.int8)",
    "y = i8 + np.int16(1000)", "y = u8 * 2.5", "y = h + 1e5",
]


def _plain(source: str, ns: dict) -> dict:
    env = dict(ns)
    with np.errstate(all="ignore"):
        exec(source, env)
    return env


@pytest.mark.parametrize("source", CASES)
def test_results_are_numpys_bit_for_bit(source):
    ns = namespace()
    want = _plain(source, ns)["y"]
    for strategy in ("unfused", "auto"):
        got_env = dict(ns)
        with np.errstate(all="ignore"):
            run_cell(got_env, source, backend="cpu", strategy=strategy, quiet=True, time=False)
        got = got_env["y"]
        assert type(got) is type(want), (strategy, type(got), type(want))
        assert np.shape(got) == np.shape(want) and got.dtype == want.dtype, (strategy, got.dtype, want.dtype)
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), (strategy, got, want)
