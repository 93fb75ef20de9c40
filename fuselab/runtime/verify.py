"""Comparing a plan's outputs with a reference run, with dtype-appropriate tolerance.

A mismatch is data, reported loudly (the worst output, where, by how much), never
hidden: the session shows it next to the speedup.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

# Relative tolerances per dtype: a few units in the last place, more for float16 whose
# "fast" mode keeps float32 intermediates, and room for reductions summed in another order.
RTOL = {np.dtype(np.float16): 4e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


@dataclass(frozen=True)
class OutputCheck:
    name: str
    ok: bool
    max_error: float            # max |got - want| / (atol + rtol |want|); <= 1 passes
    message: str


@dataclass(frozen=True)
class Check:
    ok: bool
    worst: str = ""
    details: tuple[str, ...] = field(default=())
    outputs: tuple[OutputCheck, ...] = field(default=())


def _module(*arrays: Any):
    """CuPy when any array is on the GPU (compare there, no copies), else NumPy."""
    if any(type(a).__module__.startswith("cupy") for a in arrays):
        import cupy
        return cupy
    return np


def on_host(value: Any) -> Any:
    """A CuPy array's (or scalar's) NumPy copy; anything else as it is."""
    return value.get() if type(value).__module__.startswith("cupy") and hasattr(value, "get") else value


def compare_one(name: str, got: Any, want: Any, rtol: float | Mapping[Any, float] | None = None) -> OutputCheck:
    """Within `rtol` of `want` (a number, a {dtype: rtol} map, or None for RTOL), where
    the absolute slack is rtol times the largest finite |want|: reductions and values
    that cancel are judged at the scale of the array, not of each element."""
    xp = _module(got, want)
    g, w = xp.asarray(got), xp.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return OutputCheck(name, False, float("inf"),
                           f"{name}: got {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
    if g.size == 0:
        return OutputCheck(name, True, 0.0, f"{name}: empty, ok")
    if g.dtype.kind == "c":   # each part as a float array: NaN equal to NaN, the float tolerance
        parts = [compare_one(f"{name}.{p}", getattr(g, p), getattr(w, p), rtol) for p in ("real", "imag")]
        return max(parts, key=lambda c: (not c.ok, c.max_error))
    if g.dtype.kind != "f":
        bad = g != w
        n = int(bad.sum())
        if n == 0:
            return OutputCheck(name, True, 0.0, f"{name}: exact")
        at = np.unravel_index(int(xp.argmax(bad)), g.shape)
        return OutputCheck(name, False, float(n), f"{name}: {n} of {g.size} elements differ, first at "
                                                  f"{tuple(int(i) for i in at)}: {g[at].item()!r} vs {w[at].item()!r}")
    rt = _rtol_for(g.dtype, rtol)
    worst, at_flat, n = _float_errors(xp, g, w, rt)
    if worst <= 1.0:
        return OutputCheck(name, True, worst, f"{name}: within rtol {rt:g} (worst {worst:.2f} of the tolerance)")
    at = np.unravel_index(at_flat, g.shape)
    return OutputCheck(name, False, worst,
                       f"{name}: {n} of {g.size} elements outside rtol {rt:g}; worst at "
                       f"{tuple(int(i) for i in at)}: {g[at].item()!r} vs {w[at].item()!r}")


# NumPy arrays are compared this many elements at a time: the dozen float64 temporaries of
# a chunk stay in cache (a 4096 x 1024 float32 output took 475 ms of a 617 ms cached CPU
# cell compared whole, on a 2-core EPYC, 2026-12-04); CuPy compares whole arrays at once
CHUNK = 1 << 16


def _float_errors(xp: Any, g: Any, w: Any, rt: float) -> tuple[float, int, int]:
    """(worst error, its first flat index, elements over 1) of float arrays g against w:
    |g - w| / (atol + rt |w|) in float64, atol = rt times the largest finite |w|; NaN
    against NaN and equal infinities 0, NaN in one only inf."""
    tiny = float(np.finfo(g.dtype).tiny)
    if xp is not np:
        return _errors_of(xp, g.astype(np.float64), w.astype(np.float64), rt, None, tiny)
    if g.size >= COMPILED_MIN and "numba" in sys.modules:
        compiled = _compiled_errors()
        if compiled is not None and g.dtype in compiled.COMPILED:
            return compiled.float_errors(g, w, rt, tiny)
    gf, wf = g.reshape(-1), w.reshape(-1)
    scale = 0.0
    for k in range(0, wf.size, CHUNK):
        wk = wf[k:k + CHUNK].astype(np.float64)
        scale = max(scale, float(np.max(np.where(np.isfinite(wk), np.abs(wk), 0.0))))
    worst, at, n = -1.0, 0, 0
    for k in range(0, gf.size, CHUNK):
        wk, ak, nk = _errors_of(np, gf[k:k + CHUNK].astype(np.float64), wf[k:k + CHUNK].astype(np.float64), rt,
                                scale, tiny)
        n += nk
        if wk > worst:   # the first flat index of the largest error, as one argmax over the whole
            worst, at = wk, k + ak
    return worst, at, n


# Arrays this large are compared in one compiled pass where Numba is loaded already (the
# Numba backend's cells: importing it only for this would cost its start-up, a second)
COMPILED_MIN = 1 << 18


def _compiled_errors() -> Any:
    try:
        from ..numba_backend import compare
    except Exception:   # noqa: BLE001 - a Numba that does not work here: NumPy's pieces
        return None
    return compare


def _errors_of(xp: Any, g64: Any, w64: Any, rt: float, scale: float | None, tiny: float) -> tuple[float, int, int]:
    """_float_errors over one piece (scale None: the piece's own, for a whole array)."""
    nan_g, nan_w = xp.isnan(g64), xp.isnan(w64)
    finite = xp.isfinite(w64)
    if scale is None:
        scale = float(xp.max(xp.where(finite, xp.abs(w64), 0.0)))
    atol = rt * max(scale, tiny)
    with np.errstate(invalid="ignore", over="ignore"):   # (inf - inf; max - -max: judged below)
        err = xp.abs(g64 - w64) / (atol + rt * xp.abs(w64))
    err = xp.where(nan_g & nan_w, 0.0, err)
    err = xp.where(~finite & (g64 == w64), 0.0, err)          # equal infinities
    err = xp.where(nan_g != nan_w, xp.inf, err)                # NaN in one only
    err = xp.nan_to_num(err, nan=xp.inf)
    at = int(xp.argmax(err))
    worst = float(err.reshape(-1)[at])
    n = int((err > 1.0).sum()) if worst > 1.0 else 0
    return worst, at, n


def _rtol_for(dtype: np.dtype, rtol: float | Mapping[Any, float] | None) -> float:
    if rtol is None:
        return RTOL.get(dtype, 1e-5)
    if isinstance(rtol, Mapping):
        table = {np.dtype(k): v for k, v in rtol.items()}
        return table.get(dtype, RTOL.get(dtype, 1e-5))
    return float(rtol)


def compare(got: Mapping[str, Any], want: Mapping[str, Any],
            rtol: float | Mapping[Any, float] | None = None) -> Check:
    checks = tuple(compare_one(name, got[name], want[name], rtol) for name in want)
    bad = [c for c in checks if not c.ok]
    worst = max(bad, key=lambda c: c.max_error).message if bad else ""
    return Check(not bad, worst, tuple(c.message for c in checks), checks)
