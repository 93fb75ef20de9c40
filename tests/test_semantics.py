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


OPAQUE = [
    "y = m @ m.T", "y = m @ v6", "y = v4 @ m", "y = np.dot(m, m.T)", "y = np.dot(v6, v6)", "y = np.dot(i8, i8)",
    "y = np.outer(v4, v6)", "y = np.inner(v6, v6)", "y = np.einsum('ij,kj->ik', m, m)", "y = np.einsum('ij->j', m)",
    "y = np.linalg.inv(sq)", "y = np.linalg.inv(isq)", "y = np.linalg.solve(sq, v3)", "y = np.linalg.solve(sq, sq)",
    "y = np.linalg.det(sq)", "y = np.linalg.det(fsq)", "y = np.linalg.slogdet(sq)[1]", "y = np.linalg.eigh(sym)[0]",
    "y = np.linalg.eigvalsh(fsym)", "y = np.linalg.pinv(m)", "y = np.linalg.matrix_power(isq, 2)",
    "y = np.linalg.cholesky(sym)",
    "y = np.fft.fft(v6)", "y = np.fft.fft(f32, 16)", "y = np.fft.ifft(m, axis=0)", "y = np.fft.rfft(v6)",
    "y = np.fft.irfft(np.fft.rfft(v6))", "y = np.fft.irfft(np.fft.rfft(f32), 9)", "y = np.fft.fft2(m)",
    "y = np.fft.rfftn(m)", "y = np.fft.fftshift(m)", "y = np.fft.fft(i8)",
    "y = np.sort(m, axis=0)", "y = np.sort(m, axis=None)", "y = np.argsort(v6)", "y = np.partition(v6, 2)",
    "y = np.concatenate([m, m])", "y = np.concatenate([m, m], axis=1)", "y = np.concatenate([v6, i8])",
    "y = np.concatenate([m, m], axis=None)", "y = np.stack([v6, v6], axis=1)", "y = np.vstack([v6, v6])",
    "y = np.hstack([v6, v6])", "y = np.dstack([m, m])", "y = np.column_stack([v6, v6])",
    "y = np.cumsum(i8)", "y = np.cumsum(m, axis=1)", "y = np.cumprod(u8)", "y = np.diff(m)", "y = np.diff(b)",
    "y = np.diff(v6, n=2)", "y = np.take(v6, [0, 2])", "y = np.take(m, [0, 1], axis=1)", "y = np.repeat(v6, 2)",
    "y = np.repeat(m, 3, axis=0)", "y = np.tile(v6, (2, 2))", "y = np.trace(m)", "y = np.trace(isq)",
    "y = np.median(m, axis=0)", "y = np.median(i8)", "y = np.searchsorted(np.sort(v6), v4)", "y = np.isin(i8, [1, 2])",
    "y = np.flip(m)", "y = np.roll(v6, 2)", "y = np.tril(m)", "y = np.logaddexp(v6, 1.0)",
]


def opaque_namespace():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    return {"np": np, "m": rng.standard_normal((4, 6)), "v6": rng.standard_normal(6), "v4": rng.standard_normal(4),
            "v3": rng.standard_normal(3), "sq": a + 3 * np.eye(3), "fsq": (a + 3 * np.eye(3)).astype(np.float32),
            "isq": np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]]), "sym": a @ a.T + np.eye(3),
            "fsym": (a @ a.T).astype(np.float32), "f32": rng.standard_normal(12).astype(np.float32),
            "i8": rng.integers(-9, 9, 6).astype(np.int8), "u8": rng.integers(0, 9, 5).astype(np.uint8),
            "b": rng.random(6) > 0.5}


@pytest.mark.parametrize("source", OPAQUE)
def test_opaque_shape_rules_give_numpys_shapes_and_dtypes(source):
    """Each opaque op's shape rule, against NumPy running it (no graph break: the rule
    decided the shape), and the run's values against NumPy's."""
    import fuselab
    ns = opaque_namespace()
    want = _plain(source, ns)["y"]
    traced = fuselab.trace_cell(source, ns)
    assert not traced.graph.breaks, traced.graph.breaks
    got_env = dict(ns)
    run_cell(got_env, source, backend="cpu", quiet=True, time=False)
    got = got_env["y"]
    assert type(got) is type(want) and np.shape(got) == np.shape(want) and got.dtype == want.dtype, \
        (type(got), np.shape(got), got.dtype, type(want), np.shape(want), want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-12 if want.dtype.itemsize >= 8 else 1e-6)
