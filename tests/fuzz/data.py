"""Input arrays for generated cells: ordinary values mixed with the edges of each dtype
(integer extremes, zeros and signs for division and shifts, NaN, infinities, signed
zeros, subnormals, float16's overflow edge, floats just inside and outside the integer
ranges that casts meet)."""
from __future__ import annotations

import numpy as np

DTYPES = tuple(np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                     "int64", "uint64", "float16", "float32", "float64"))
FLOATS = tuple(d for d in DTYPES if d.kind == "f")
INTS = tuple(d for d in DTYPES if d.kind in "iu")


def _float_edges(dt: np.dtype) -> list[float]:
    fi = np.finfo(dt)
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, np.nan, np.inf, -np.inf,
             float(fi.tiny), float(fi.tiny) / 4, -float(fi.tiny) / 2, float(fi.max), -float(fi.max)]
    # the ranges integer casts meet: just inside and outside, and .5 cases
    for lim in (127, 128, 255, 256, 32767, 65535, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64):
        if lim < float(fi.max):
            edges += [float(lim) - 0.75, float(lim), -float(lim) - 0.5]
    if dt == np.float16:
        edges += [65504.0, 65519.0, 6.1e-5, 6e-8, 2048.0, 2049.0]
    return edges


def sample(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...], edges: float = 0.15) -> np.ndarray:
    """Random values of `dtype`; a fraction `edges` of the elements are edge values."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        out = rng.random(n) < 0.5
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        lo = max(int(info.min), -40)
        out = rng.integers(lo, min(int(info.max), 40), n, endpoint=True).astype(dt)
        if n and edges:
            pick = rng.random(n) < edges
            special = np.array([info.min, info.max, info.min + 1, info.max - 1, 0, 1, 2, -1 % (int(info.max) + 1)
                                if dt.kind == "u" else -1, -2 if dt.kind == "i" else 3, 7, 8, 63, 64],
                               dtype=object)
            vals = np.array([int(v) for v in rng.choice(special, int(pick.sum()))], dtype=object)
            out[pick] = vals.astype(dt)
    else:
        scale = float(rng.choice([1.0, 3.0, 100.0]))
        out = (rng.standard_normal(n) * scale).astype(dt)
        if n and edges:
            pick = rng.random(n) < edges
            with np.errstate(all="ignore"):
                out[pick] = np.array(rng.choice(_float_edges(dt), int(pick.sum())), dtype=np.float64).astype(dt)
    return out.reshape(shape)


def tame(rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Values without edges (for reductions whose point is their layout)."""
    return sample(rng, dtype, shape, edges=0.0)
