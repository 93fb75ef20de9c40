"""Partial states of reductions over blocks, their combine and their finish, with NumPy's
results: a sum or product accumulates in the dtype the op table's `reduce_rule` gives;
max / min propagate NaN; argmax / argmin give the first extreme (the first NaN) by its
global index, wherever the blocks lie; a variance combines (count, mean, m2) with Chan's
formula in float64. An empty block contributes its identity (NumPy's own empty
reductions are refused while tracing, so some block always holds elements).

These run inside `dask.array.reduction` (concatenate=False): `combine` and `aggregate`
receive nested lists of states, one level per reduced axis, as Dask gives them.
"""
from __future__ import annotations

import math

import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..ops import reduce_rule


@dataclass(frozen=True)
class Partial:
    """A reduction computed as block states: its op, its node in the plan's graph, its axes,
    and NumPy's result (dtype, keepdims, ddof, flat for argmax over all axes)."""

    op: str
    node: int              # the reduction in the plan's graph
    axes: tuple[int, ...]
    dtype: np.dtype
    keepdims: bool
    ddof: int = 0
    flat: bool = False
    # per axis of the reduced input: which position operand of the block holds the global
    # positions of its elements along that axis (None: a unit axis, or not reduced)
    positions: tuple[int | None, ...] = ()
    shape: tuple[int, ...] = ()       # the reduced input's full shape (argmax over all axes)
    in_dtype: np.dtype = np.dtype(np.float64)


State = dict  # field -> array of the keepdims shape

_NO_INDEX = np.iinfo(np.int64).max


def array_module(x: Any) -> Any:
    return sys.modules["cupy"] if type(x).__module__.startswith("cupy") else np


def _keep(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if k in axes else d for k, d in enumerate(shape))


def identity(p: Partial, xshape: tuple[int, ...], xp: Any) -> State:
    """The state of a block with no element along the reduced axes."""
    shape = _keep(xshape, p.axes)
    op = {"argmax": "max", "argmin": "min"}.get(p.op, p.op)  # an arg state's value starts as max's
    rule = reduce_rule(op, p.in_dtype, p.in_dtype if op != p.op else p.dtype)
    if p.op == "var":
        z = xp.zeros(shape, np.float64)
        return {"n": z, "mean": z, "m2": z}
    if p.op in ("argmax", "argmin"):
        return {"i": xp.full(shape, _NO_INDEX, np.int64), "v": xp.full(shape, rule.start, rule.acc)}
    return {"v": xp.full(shape, rule.start, rule.acc)}


def finish_partial(p: Partial, fields: dict[str, Any], xshape: tuple[int, ...], positions: Sequence[Any],
                   like: Any) -> State:
    """A block's state from its program's partial nodes (`fields`); `positions`: the
    global positions of the block's elements along the reduced axes."""
    xp = array_module(like)
    if not fields:
        return identity(p, xshape, xp)
    if p.op == "var":
        n = 1
        for a in p.axes:
            n *= xshape[a]
        s, var = fields["s"], fields["m2"]
        return {"n": xp.full(s.shape, n, np.float64), "mean": s / n, "m2": var * n}
    if p.op in ("argmax", "argmin"):
        offsets = [0 if k is None else int(positions[k][0]) for k in p.positions] + \
            [0] * (len(xshape) - len(p.positions))
        i = fields["i"].astype(np.int64)
        if p.flat:  # the block's flat index -> the input's flat index
            local = xp.unravel_index(i, xshape)
            i = xp.ravel_multi_index(tuple(c + o for c, o in zip(local, offsets)), p.shape).astype(np.int64)
        else:
            i = i + offsets[p.axes[0]]
        return {"i": i, "v": fields["v"]}
    return {"v": fields["v"]}


def _concat(parts: Any, axes: Sequence[int]) -> State:
    if not isinstance(parts, list):
        return parts
    inner = [_concat(e, axes[1:]) for e in parts]
    xp = array_module(next(iter(inner[0].values())))
    return {f: xp.concatenate([s[f] for s in inner], axis=axes[0]) for f in inner[0]}


def fold(p: Partial, st: State, axes: tuple[int, ...]) -> State:
    """Reduce a concatenated state along `axes` (keepdims)."""
    xp = array_module(next(iter(st.values())))
    if p.op == "var":
        n, mean, m2 = st["n"], st["mean"], st["m2"]
        total = n.sum(axis=axes, keepdims=True)
        with np.errstate(all="ignore"):
            mu = xp.where(total > 0, (n * mean).sum(axis=axes, keepdims=True) / xp.where(total > 0, total, 1), 0.0)
        dev = mean - mu
        return {"n": total, "mean": mu, "m2": m2.sum(axis=axes, keepdims=True) + (n * dev * dev).sum(axis=axes, keepdims=True)}
    if p.op in ("argmax", "argmin"):
        return _fold_arg(p, st, axes, xp)
    v = st["v"]
    fn = {"sum": xp.sum, "prod": xp.prod, "max": xp.max, "min": xp.min, "any": xp.any, "all": xp.all}[p.op]
    kw = {"dtype": v.dtype} if p.op in ("sum", "prod") else {}
    return {"v": fn(v, axis=axes, keepdims=True, **kw)}


def _fold_arg(p: Partial, st: State, axes: tuple[int, ...], xp: Any) -> State:
    """The extreme value with the smallest global index; a NaN beats every number."""
    v, i = st["v"], st["i"]
    keep = [k for k in range(v.ndim) if k not in axes]
    order = keep + list(axes)
    shape = [v.shape[k] for k in keep]
    # (the number of states spelled out: reshape cannot infer a -1 beside a 0-length axis)
    n = math.prod(v.shape[k] for k in axes)
    vv = xp.transpose(v, order).reshape(shape + [n])
    ii = xp.transpose(i, order).reshape(shape + [n])
    best = vv.max(axis=-1, keepdims=True) if p.op == "argmax" else vv.min(axis=-1, keepdims=True)
    if vv.dtype.kind == "f":
        nan = xp.isnan(vv)
        has_nan = nan.any(axis=-1, keepdims=True)
        cand = xp.where(has_nan, nan, vv == best)
        best = xp.where(has_nan, xp.asarray(np.nan, vv.dtype), best)
    else:
        cand = vv == best
    idx = xp.where(cand, ii, _NO_INDEX).min(axis=-1, keepdims=True)
    out_shape = _keep(v.shape, axes)
    back = np.argsort(order)
    return {"i": xp.transpose(idx.reshape(shape + [1] * len(axes)), back).reshape(out_shape),
            "v": xp.transpose(best.reshape(shape + [1] * len(axes)), back).reshape(out_shape)}


def combine(parts: Any, p: Partial, axis: Sequence[int], keepdims: bool = True) -> State:
    axes = tuple(sorted(axis))
    return fold(p, _concat(parts, axes), axes)


def aggregate(parts: Any, p: Partial, axis: Sequence[int], keepdims: bool = False) -> Any:
    """NumPy's result of the reduction from the states of all blocks."""
    axes = tuple(sorted(axis))
    st = combine(parts, p, axes)
    xp = array_module(next(iter(st.values())))
    if p.op == "var":
        with np.errstate(all="ignore"):
            out = st["m2"] / xp.maximum(st["n"] - p.ddof, 0)
    elif p.op in ("argmax", "argmin"):
        out = st["i"]
    else:
        out = st["v"]
    out = out.astype(p.dtype)
    if not keepdims:
        out = out.reshape(tuple(d for k, d in enumerate(out.shape) if k not in axes))
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out  # NumPy's scalar, as Dask's


def pick(block: tuple, index: int, axis: Any = None, keepdims: bool = True) -> Any:
    """Element `index` of a block task's tuple (also da.reduction's chunk step)."""
    return block[index]
