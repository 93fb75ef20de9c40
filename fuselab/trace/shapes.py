"""Views and indexing: reshape, transpose and basic indexing are views of their source,
as in NumPy (the binding gives real views of the user's arrays); advanced indexing copies;
boolean masks have a data-dependent length; item assignment updates the array in place."""
from __future__ import annotations

import math
import operator
import weakref
from typing import Any, Sequence

import numpy as np

from ..codegen.index import strides as c_strides
from ..ops import Args, Aval, OpaqueFn, ShapeError, broadcast_shapes, normalize_axes
from ..ir import Node
from .core import InputTracer, TraceContext, Tracer, dask_lazy, is_array, is_cupy_array, mentions_tracer
from .layout import Layout, k_order, strides_in, strides_order, value_layout
from .mutate import PART_VIEWS, add_view, is_part_view, update_in_place
from .opaque import LAYOUT_OF, Slot, data_dependent, fill
from .operands import RunForReal, Weak, check_fits, convert_scalar, copy_as, node_of, operand, wrap
from .registry import handles


def view_of(ctx: TraceContext, source: Any, node: int, *, chain: tuple[Node, ...] | None = None,
            scalar: bool = True) -> Tracer:
    """A new array object that views `source`'s memory (NumPy makes a new object even
    when nothing changes: x.reshape(x.shape) is not x). `chain`: the view's ops when the
    graph cannot show them (a complex array's real part). Of a NumPy scalar (`s.T`,
    `s.reshape(())`), NumPy gives a new scalar where the result is 0-d (`scalar`)."""
    if isinstance(source, Tracer):
        if source._scalar:
            # an array view of a NumPy scalar (`s.reshape(1)`, `s[...]`) views the 0-d array
            # NumPy made of the scalar: it owns no memory
            t = wrap(ctx, node, scalar=scalar)
            t._temp_view = not t._scalar
            return t
        origin = ("view", source, ctx.versions.get(id(source), 0)) + ((chain,) if chain else ())
        t = Tracer(ctx, node, origin=origin)
        if source.dtype != t.aval.dtype:   # a view of a big-endian array is big-endian too
            dt = source.dtype if source.dtype.kind == t.aval.dtype.kind else \
                t.aval.dtype.newbyteorder(source.dtype.byteorder)
            t._dtype = dt if dt != t.aval.dtype else None
        add_view(source, t)
        return t
    if type(source) in (list, tuple) and mentions_tracer(source):
        # NumPy's view of the new array it made of the list (`np.ravel([a, a])`,
        # `np.transpose([a, a])`): it owns no memory, its strides are the view's of that array
        base = node
        while ctx.builder.nodes[base].op in ("slice", "reshape", "transpose", "broadcast_to"):
            base = ctx.builder.nodes[base].inputs[0]
        if base != node:
            return view_of(ctx, wrap(ctx, base), node, chain=chain, scalar=scalar)
    return wrap(ctx, node)


def complex_part(ctx: TraceContext, x: Tracer, part: str) -> Tracer:
    """x.real / x.imag of a complex array: a view of its memory (writes reach x, and x's
    later updates show), or a NumPy scalar of a complex scalar."""
    b = ctx.builder
    node = b.opaque(PART_VIEWS[part], [x._node], Aval(x.shape, np.dtype(x.aval.dtype.char.lower())), (),
                    ctx.loc())
    return view_of(ctx, x, node, chain=(b.nodes[node],))


def _resolve_shape(size: int, shape: Sequence[int]) -> tuple[int, ...]:
    shape = [operator.index(d) for d in shape]   # (x.reshape(8.0), 'a': NumPy's TypeError)
    if shape.count(-1) > 1:
        raise ShapeError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = size // known
    return tuple(shape)


@handles("reshape")
def reshape(ctx, x, *shape, newshape=None, order="C", copy=None, **kw):
    """A view where NumPy's reshape views (the new shape has strides over x's memory),
    else a new array, as NumPy's _attempt_nocopy_reshape decides; order 'F' reshapes
    the reversed axes (x.T.reshape(shape[::-1]).T), which views exactly when NumPy's
    Fortran-order reshape does."""
    if kw.get("shape") is not None:
        shape = (kw.pop("shape"),)
    if newshape is not None:
        shape = (newshape,)
    if order not in ("C", "F", "A") or kw or (order != "C" and dask_lazy(ctx, x)):
        raise RunForReal(order)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    n = node_of(ctx, x)
    b, loc = ctx.builder, ctx.loc()
    new = _resolve_shape(b.aval(n).size, shape)
    if dask_lazy(ctx, x) and not _dask_reshapes(ctx, n, new):
        raise RunForReal(shape)   # Dask's own error at the line, as plain Dask raises it
    layout = _layout(ctx, x) if isinstance(x, Tracer) and not x._scalar else None
    if order == "A":   # Fortran order only for an array that is Fortran- and not C-contiguous
        order = "F" if layout is not None and _contiguous(layout, "F") and not _contiguous(layout, "C") else "C"
    if order == "F":
        rev = b.transpose(n, tuple(reversed(range(b.aval(n).ndim))), loc)
        node = b.transpose(b.reshape(rev, new[::-1], loc), tuple(reversed(range(len(new)))), loc)
    else:
        node = b.reshape(n, new, loc)
    if not isinstance(x, Tracer) or x._scalar:
        return view_of(ctx, x, node)
    views = layout is None or tuple(b.aval(n).shape) == new or _reshape_views(layout, new, order)
    if copy is False and not views:
        raise RunForReal(copy)   # NumPy's "Unable to avoid creating a copy while reshaping"
    if views and not copy:
        return view_of(ctx, x, node)
    t = copy_as(ctx, x, node, lambda a: a.reshape(new, order=order))
    # NumPy copies x in that order and views the copy: a new array that owns no memory
    # (CuPy's copy is the result itself)
    t._order = strides_order(len(new), order)
    t._temp_view = not ctx.uses_cupy
    return t


def set_shape(ctx: TraceContext, x: Tracer, shape: Any) -> None:
    """`x.shape = shape`: the same array object takes the new shape where NumPy can give it
    without a copy (else NumPy's AttributeError). Followed for an array the cell made, and
    for a C-contiguous array of the user's that shares its memory with no other traced
    array (its object takes the shape when the cell's bindings are made); one whose views
    are in use is refused (clear error)."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    try:
        new = _resolve_shape(x.aval.size, [operator.index(d) for d in shape])
        if math.prod(new) != x.aval.size:
            raise ShapeError(shape)
    except ShapeError:
        # NumPy's own error and words ("into shape (3,newaxis)"), from an array of no memory
        np.broadcast_to(np.empty((), np.bool_), x.aval.shape).reshape(shape)
        raise
    if x._scalar:
        raise AttributeError("attribute 'shape' of 'numpy.generic' objects is not writable")
    layout = _layout(ctx, x)
    if layout is not None and tuple(x.shape) != new and not _reshape_views(layout, new, "C"):
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a copy "
                             "with the desired shape.")
    live = [r for r in (x._views or ()) if r() is not None]
    c_order = x._order is None or tuple(x._order) == tuple(range(x.ndim))
    if isinstance(x, InputTracer):
        arr = x._array
        m = ctx.aliases._of.get(id(arr))
        ok = (type(arr) is np.ndarray or is_cupy_array(arr)) and arr.flags.c_contiguous and x._alias is None and \
            (m is None or not m.shared)
    else:
        ok = not x._temp_view and layout is not None and c_order
    if not ok or live:
        raise ctx.refuse("setting `.shape` changes an array in place, which %%fuse follows for an array the "
                         "cell made or a contiguous one of yours, with no views of it in use",
                         "make a new array instead (x = x.reshape(...))")
    b = ctx.builder
    node = b.reshape(x._node, new, ctx.loc())
    ctx.versions[id(x)] = ctx.versions.get(id(x), 0) + 1
    if isinstance(x, InputTracer):
        held = ctx.held
        if held is not None and x._alias is None and held.holds(x._array):
            # another object holds the array (`L = [m]`): NumPy's object takes the shape
            # now, and `L[0].shape` says so (held.write gives it the shape, re-reads it)
            node = held.write(x, node, "setting `.shape`")
            x._node = node
            object.__setattr__(x, "_input", node)
            return
        new_shapes(ctx)[id(x._array)] = (x._array, new)
        x._node = node   # (an update: the object is written back, in its new shape)
        return
    o = x._origin
    if o is not None and o[0] == "view" and len(o) > 3:
        x._origin = o[:3] + (o[3] + (b.nodes[node],),)
    elif o is not None and o[0] == "copy":
        x._origin = None   # (its copy's recipe makes the old shape)
    x._order = None
    x._node = node


def new_shapes(ctx: TraceContext) -> dict[int, tuple[Any, tuple[int, ...]]]:
    """id(user's array) -> (the array, the shape the cell set on it: `x.shape = ...`)."""
    return ctx.__dict__.setdefault("_new_shapes", {})


def _dask_reshapes(ctx: TraceContext, node: int, new: tuple[int, ...]) -> bool:
    """Does Dask reshape node's value to `new`? Its reshape depends on the chunks (it
    refuses one that is not a merge or split of whole chunks, or a 0-length chunked
    axis), which the graph does not know: it is asked of the lazy value (no compute)."""
    try:
        ctx.evaluator.value(node).reshape(new)
    except Exception:   # noqa: BLE001 - any refusal: the real call raises it at the line
        return False
    return True


def _reshape_views(layout: tuple[tuple[int, ...], tuple[int, ...]], new: tuple[int, ...], order: str) -> bool:
    shape, strides = layout
    if order == "F":
        shape, strides, new = shape[::-1], strides[::-1], new[::-1]
    return _reshaped_strides(shape, strides, new) is not None


@handles("ravel")
def ravel(ctx, x, order="C"):
    """A view where NumPy's ravel views (an array contiguous in the order asked: C, F;
    'A' and 'K' as the one it is contiguous in), else a copy: NumPy's ravel copies where
    a reshape could still view (`x[::-1].ravel()` is a new array, `x[::-1].reshape(-1)` a view)."""
    if order != "C" and dask_lazy(ctx, x):
        raise RunForReal(order)
    layout = _layout(ctx, x) if isinstance(x, Tracer) and not x._scalar else None
    if order in ("A", "K") and layout is not None:
        if _contiguous(layout, "C"):
            order = "C"
        elif _contiguous(layout, "F"):
            order = "F"
        elif order == "K":
            raise RunForReal(order)   # memory order of a non-contiguous array: NumPy's
        else:
            order = "C"
    if order not in ("C", "F"):
        raise RunForReal(order)
    t = reshape(ctx, x, -1, order=order)
    if not isinstance(t, Tracer) or layout is None or _contiguous(layout, order):
        return t
    return copy_as(ctx, x, t._node, lambda a: a.ravel(order))


def _c_contiguous(ctx: TraceContext, x: Tracer) -> bool:
    """Whether the array NumPy has for `x` is C-contiguous, from the strides its view ops
    give the user's array's own (a computed value is a new C-ordered array). Views whose
    ops cannot be read count as contiguous (a view, as before)."""
    layout = _layout(ctx, x)
    return layout is None or _contiguous(layout, "C")


def _contiguous(layout: tuple[tuple[int, ...], tuple[int, ...]], order: str) -> bool:
    shape, strides = layout
    if order == "F":
        shape, strides = shape[::-1], strides[::-1]
    want = 1
    for d, st in zip(reversed(shape), reversed(strides)):
        if d == 1:
            continue
        if st != want:
            return False
        want *= d
    return True


def layout_of(ctx: TraceContext, x: Any) -> Layout | None:
    """(shape, strides in elements) of the array NumPy has for an operand: a tracer's,
    a concrete array's, None for a scalar or an unknown layout."""
    if isinstance(x, Tracer):
        return None if x._scalar else _layout(ctx, x)
    return value_layout(x) if is_array(x) else None


LAYOUT_OF.append(layout_of)


def k_ordered(ctx: TraceContext, t: Any, operands: Sequence[Any]) -> Any:
    """`t`, a new element-wise result, laid out as NumPy lays it out ('K': in its
    operands' order of axes where they agree: `a.T * 2` is Fortran-ordered). CuPy's
    element-wise results are C-ordered (CuPy 14, on an H200: `a.T * 2` too)."""
    if isinstance(t, Tracer) and not t._scalar and t.ndim > 1 and t._origin is None:
        t._order = tuple(range(t.ndim)) if ctx.uses_cupy else \
            k_order(t.shape, [layout_of(ctx, a) for a in operands])
    return t


def _layout(ctx: TraceContext, x: Tracer) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(shape, strides in elements) of the array NumPy has for `x`, or None if unknown."""
    from .mutate import view_ops
    if isinstance(x, InputTracer):
        a = x._array
        if not hasattr(a, "strides") or not getattr(a, "itemsize", 0):
            return None
        if id(a) in ctx.__dict__.get("_new_shapes", {}):   # (`x.shape = ...` in the cell: contiguous)
            return tuple(x.shape), c_strides(x.shape)
        return tuple(a.shape), tuple(s // a.itemsize for s in a.strides)
    o = x._origin
    if o is None or o[0] != "view":   # a new array, contiguous in its order
        return tuple(x.shape), strides_in(x.shape, x._order)
    chain = view_ops(ctx, x, o[1])
    base = _layout(ctx, o[1]) if chain is not None else None
    if base is None:
        return None
    shape, strides = base
    for n in chain:
        if n.op == "transpose":
            strides = tuple(strides[a] for a in n.args["perm"])
        elif n.op == "slice":
            strides = tuple(st * step for st, step in zip(strides, n.args["step"]))
        elif n.op == "reshape" and "index" in n.args:   # basic indexing: new axes have stride 0
            strides = _indexed_strides(strides, n.args["index"])
        elif n.op == "reshape":
            strides = _reshaped_strides(shape, strides, n.shape) or c_strides(n.shape)   # else NumPy copies
        elif n.op == "broadcast_to":   # new and stretched axes have stride 0
            lead = len(n.shape) - len(shape)
            strides = tuple(0 if i < lead or shape[i - lead] != d else strides[i - lead]
                            for i, d in enumerate(n.shape))
        elif is_part_view(n):   # every other element of the complex array's, in its parts' units
            strides = tuple(2 * st for st in strides)
        else:
            return None
        shape = tuple(n.shape)
    return shape, strides


def _indexed_strides(strides: tuple[int, ...], code: tuple[int, ...]) -> tuple[int, ...]:
    """The strides after an index of new axes (-1), taken axes (0) and full slices (1)."""
    old = iter(strides)
    out: list[int] = []
    for c in code:
        if c < 0:
            out.append(0)
            continue
        st = next(old)
        if c:
            out.append(st)
    return tuple(out)


def _reshaped_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                      new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of a reshape that views, or None where NumPy must copy (after NumPy's
    _attempt_nocopy_reshape: each run of old axes that becomes a run of new ones must be
    contiguous within itself)."""
    old = [(d, st) for d, st in zip(shape, strides) if d != 1]
    if any(d == 0 for d in new) or not old:
        return c_strides(tuple(new))
    dims = list(new)
    out = [0] * len(dims)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(dims) and oi < len(old):
        np_, op = dims[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= dims[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * dims[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    for k in range(ni, len(dims)):   # trailing new axes of length 1
        out[k] = 1
    return tuple(out)


@handles("transpose", "permute_dims")
def transpose(ctx, x, *axes):
    n = node_of(ctx, x)
    nd = ctx.builder.aval(n).ndim
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    if axes:
        normalize_axes(tuple(axes), nd, "axes")  # NumPy's errors for bad or repeated axes
        perm = tuple(int(a) % nd for a in axes)
    else:
        perm = tuple(reversed(range(nd)))
    return view_of(ctx, x, ctx.builder.transpose(n, perm, ctx.loc()))


@handles("swapaxes")
def swapaxes(ctx, x, axis1, axis2):
    nd = ctx.builder.aval(node_of(ctx, x)).ndim
    a, b = normalize_axes(axis1, nd)[0], normalize_axes(axis2, nd)[0]
    perm = list(range(nd))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(ctx, x, tuple(perm))


@handles("moveaxis")
def moveaxis(ctx, x, source, destination):
    nd = ctx.builder.aval(node_of(ctx, x)).ndim
    src = [int(s) for s in ((source,) if isinstance(source, (int, np.integer)) else source)]
    dst = [int(d) for d in ((destination,) if isinstance(destination, (int, np.integer)) else destination)]
    if len(src) != len(dst) or not all(-nd <= a < nd for a in src + dst) or \
            len({a % nd for a in src}) != len(src) or len({a % nd for a in dst}) != len(dst):
        raise RunForReal(source)   # axes out of bounds or repeated: NumPy's AxisError / ValueError
    src, dst = [a % nd for a in src], [a % nd for a in dst]
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(ctx, x, tuple(order))


@handles("expand_dims")
def expand_dims(ctx, x, axis):
    n = node_of(ctx, x)
    a = ctx.builder.aval(n)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = a.ndim + len(axes)
    axes = normalize_axes(axes, nd)
    it = iter(a.shape)
    shape = tuple(1 if i in axes else next(it) for i in range(nd))
    return view_of(ctx, x, ctx.builder.reshape(n, shape, ctx.loc()))


@handles("squeeze")
def squeeze(ctx, x, axis=None):
    n = node_of(ctx, x)
    a = ctx.builder.aval(n)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        axes = normalize_axes(axis, a.ndim)
        if any(a.shape[i] != 1 for i in axes):
            raise RunForReal(axis)  # NumPy's error
    if not axes and isinstance(x, Tracer):
        return x  # NumPy returns the array itself when nothing is squeezed
    shape = tuple(d for i, d in enumerate(a.shape) if i not in axes)
    return view_of(ctx, x, ctx.builder.reshape(n, shape, ctx.loc()))


@handles("broadcast_to")
def broadcast_to(ctx, x, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    t = view_of(ctx, x, ctx.builder.broadcast_to(node_of(ctx, x), shape, ctx.loc()))
    if isinstance(t, Tracer):   # read-only in its own shape too (the graph has no broadcast node there)
        from .values import read_only
        read_only(ctx)[id(t)] = (weakref.ref(t), False)
    return t


# (np.atleast_Nd, array dimensions) -> the index NumPy takes (else it reshapes)
_ATLEAST_KEYS = {(2, 1): (None, slice(None)), (3, 1): (None, slice(None), None),
                 (3, 2): (slice(None), slice(None), None)}


def _atleast_n(nd_min: int):
    def h(ctx, *arys):
        outs = []
        for x in arys:
            n = node_of(ctx, x)
            a = ctx.builder.aval(n)
            if a.ndim >= nd_min and isinstance(x, Tracer):
                outs.append(x)  # already enough dimensions: the array itself
                continue
            key = _ATLEAST_KEYS.get((nd_min, a.ndim))
            if key is not None and isinstance(x, Tracer) and not x._scalar and not ctx.uses_cupy:
                outs.append(getitem(ctx, x, key))   # NumPy indexes with np.newaxis here (stride 0; CuPy reshapes)
                continue
            if nd_min == 3 and a.ndim == 1:
                shape = (1, a.shape[0], 1)
            elif nd_min == 3 and a.ndim == 2:
                shape = a.shape + (1,)
            else:
                shape = (1,) * (nd_min - a.ndim) + a.shape
            outs.append(view_of(ctx, x, ctx.builder.reshape(n, shape, ctx.loc())))
        return outs[0] if len(outs) == 1 else tuple(outs)
    return h


handles("atleast_1d")(_atleast_n(1))
handles("atleast_2d")(_atleast_n(2))
handles("atleast_3d")(_atleast_n(3))


# np.flip & co. are indexing with reversed slices in NumPy (numpy/lib/_function_base_impl.py,
# _twodim_base_impl.py): views of their argument, a scalar of a 0-d one, as its indexing gives
@handles("flip")
def flip(ctx, m, axis=None):
    if not isinstance(m, Tracer):
        raise RunForReal(m)
    axes = normalize_axes(axis, m.ndim)
    return getitem(ctx, m, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim)))


@handles("fliplr")
def fliplr(ctx, m):
    if not isinstance(m, Tracer):
        raise RunForReal(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return getitem(ctx, m, (slice(None), slice(None, None, -1)))


@handles("flipud")
def flipud(ctx, m):
    if not isinstance(m, Tracer):
        raise RunForReal(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return getitem(ctx, m, (slice(None, None, -1), Ellipsis))


# ---------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------

def _is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or isinstance(k, slice) or \
        (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))


def _expand(key: tuple, ndim: int) -> tuple:
    """The key with its Ellipsis replaced by full slices (one per unindexed dimension)."""
    n_real = sum(_consumes(k) for k in key)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {n_real} were indexed")
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        return key[:i] + (slice(None),) * (ndim - n_real) + key[i + 1:]
    return key + (slice(None),) * (ndim - n_real)


def _consumes(k: Any) -> int:
    if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)):
        return 0   # (a scalar boolean is a 0-d mask: a new axis of length 1 or 0, `a0[True]`)
    if isinstance(k, (Tracer, np.ndarray)) and np.dtype(k.dtype) == np.bool_:
        return max(k.ndim, 1) if k.ndim else 0
    return 1


def _cupy_bound(v: Any) -> Any:
    """A slice bound as CuPy's indexing takes it: a 0-d integer array (k = a.argmax();
    a[:k]) as its int, though CuPy's arrays have no __index__ (range(k) raises)."""
    if isinstance(v, Tracer) and v.ndim == 0 and np.dtype(v.dtype).kind in "iu":
        return int(v)
    return v


def getitem(ctx: TraceContext, x: Tracer, key: Any) -> Any:
    key = key if isinstance(key, tuple) else (key,)
    if not all(_is_basic(k) for k in key):
        return _advanced_getitem(ctx, x, key)
    a = x.aval
    full = _expand(key, a.ndim)
    starts, steps, lengths, final = [], [], [], []
    dim = 0
    for k in full:
        if k is None:
            final.append(1)
            continue
        size = a.shape[dim]
        if isinstance(k, slice):
            if ctx.uses_cupy:
                k = slice(*(_cupy_bound(v) for v in (k.start, k.stop, k.step)))
            start, stop, step = k.indices(size)
            n = len(range(start, stop, step))
            starts.append(start if n else 0)
            steps.append(step)
            lengths.append(n)
            final.append(n)
        else:
            i = int(k)
            if not -size <= i < size:
                raise IndexError(out_of_bounds(ctx, k, dim, size))
            starts.append(i % size)
            steps.append(1)
            lengths.append(1)
        dim += 1
    b, loc = ctx.builder, ctx.loc()
    node = b.reshape(b.slice(x._node, starts, steps, lengths, loc), final, loc)
    if not final and not any(k is None or k is Ellipsis or isinstance(k, slice) for k in key) \
            and not ctx.uses_cupy:
        return wrap(ctx, node, scalar=True)  # every axis taken by an integer: a NumPy scalar
    # (CuPy gives a 0-d view there: `x[0], x[1] = x[1], x[0]` copies x[1]'s new value back)
    chain = _indexing_chain(ctx, x, node, full) if any(k is None for k in full) else None
    return view_of(ctx, x, node, chain=chain, scalar=False)   # (`s[...]` of a NumPy scalar is a 0-d array)


def _indexing_chain(ctx: TraceContext, x: Tracer, node: int, full: tuple) -> tuple[Node, ...] | None:
    """The view ops of `x[key]` with new axes, whose reshape (the graph's op for the
    indexing) is marked with the key: NumPy's new axes have stride 0 (`a[None]` of a
    1-D array has strides (0, 8), a reshape's would be (24, 8)), and the binding takes
    the view by the index itself (interp.eval_node). None where the graph folded the
    ops into others."""
    from .mutate import _chain
    ids = _chain(ctx, node, x._node)
    if not ids or ctx.builder.nodes[ids[-1]].op != "reshape":
        return None
    nodes = [ctx.builder.nodes[i] for i in ids]
    code = tuple(-1 if k is None else 1 if isinstance(k, slice) else 0 for k in full)
    last = nodes[-1]
    nodes[-1] = Node("reshape", last.inputs, Args.of(**dict(last.args), index=code), last.aval, last.loc)
    return tuple(nodes)


def _index_arrays(ctx: TraceContext, key: tuple) -> tuple[list[int], list[Any]]:
    """Array parts of an advanced index become graph inputs; the rest stays static."""
    nodes: list[int] = []
    slots: list[Any] = []
    for k in key:
        if isinstance(k, list) and not mentions_tracer(k):
            # (an array of the cell's module: CuPy indexes with CuPy's arrays)
            arr = (ctx.evaluator.xp if ctx.uses_cupy else np).asarray(k)
            # an empty sequence indexes as integers (NumPy's `x[[]]`), not as float64
            k = arr.astype(np.intp) if arr.size == 0 and arr.dtype.kind == "f" else arr
        if isinstance(k, Tracer) or is_array(k) or isinstance(k, list):
            nodes.append(node_of(ctx, k))
            slots.append(Slot(len(nodes) - 1))
        elif _is_basic(k):
            slots.append(k)
        else:
            raise RunForReal(k)
    return nodes, slots


def advanced_shape(shape: tuple[int, ...], key: tuple, index_avals: Sequence[Aval]) -> tuple[int, ...]:
    """NumPy's result shape for integer-array indexing: the index arrays broadcast
    together; their shape goes where they stand if they are adjacent, else first."""
    it = iter(index_avals)
    parts: list[tuple[str, Any]] = []
    dim = 0
    for k in _expand(key, len(shape)):
        if k is None:
            parts.append(("basic", (1,)))
        elif isinstance(k, slice):
            parts.append(("basic", (len(range(*k.indices(shape[dim]))),)))
            dim += 1
        elif isinstance(k, Slot):
            av = next(it)
            parts.append(("adv", av.shape))
            dim += 1
        else:  # an integer among index arrays is an index array of shape ()
            parts.append(("adv", ()))
            dim += 1
    adv = [i for i, (kind, _) in enumerate(parts) if kind == "adv"]
    bshape = broadcast_shapes(*(parts[i][1] for i in adv))
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    out: list[int] = [] if contiguous else list(bshape)
    for i, (kind, s) in enumerate(parts):
        if kind == "basic":
            out.extend(s)
        elif contiguous and i == adv[0]:
            out.extend(bshape)
    return tuple(out)


def out_of_bounds(ctx: TraceContext, index: Any, dim: int, size: int) -> str:
    """The library's words for an integer index outside its axis: CuPy's in a CuPy cell
    (cupy/_core/_routines_indexing.pyx says "Index"), NumPy's otherwise."""
    word = "Index" if ctx.uses_cupy else "index"
    return f"{word} {index} is out of bounds for axis {dim} with size {size}"


def _check_bounds(ctx: TraceContext, shape: tuple[int, ...], key: tuple) -> None:
    """Integer index arrays known now are checked now, with NumPy's IndexError. CuPy
    raises none there (its integer-array indexing wraps out-of-bounds indices around,
    a documented difference from NumPy): in a CuPy cell CuPy's indexing decides."""
    if ctx.uses_cupy:
        return
    dim = 0
    for k in _expand(key, len(shape)):
        if k is None:
            continue
        arr = None
        if isinstance(k, (np.ndarray, list)) and not isinstance(k, Tracer):
            arr = np.asarray(k)
        elif isinstance(k, Tracer) and k.aval.size and k.aval.dtype.kind in "iu" and ctx.in_try():
            # traced indices inside a `try`: NumPy's IndexError must be raised at this
            # line, where the cell can catch it (not when the plan runs): their values now
            arr = np.asarray(k._value("the bounds of an index array, inside a `try`"))
        if arr is not None:
            if arr.size and arr.dtype.kind in "iu":
                bad = np.flatnonzero((arr < -shape[dim]) | (arr >= shape[dim]))
                if bad.size:   # (NumPy names the first, in the index array's order)
                    raise IndexError(out_of_bounds(ctx, arr.flat[bad[0]], dim, shape[dim]))
        dim += 1


def _is_mask(k: Any) -> bool:
    """A boolean index: an array, or a list of bools (`m[[True, False, True]]` selects
    rows as a mask does, NumPy's and CuPy's)."""
    if isinstance(k, Tracer) or is_array(k):
        return np.dtype(k.dtype) == np.bool_
    if isinstance(k, list) and k and not mentions_tracer(k):
        try:
            return np.asarray(k).dtype == np.bool_
        except (ValueError, TypeError):
            return False
    return False


def _advanced_getitem(ctx: TraceContext, x: Tracer, key: tuple) -> Any:
    if any(_consumes(k) != 1 and not _is_basic(k) for k in key) or any(_is_mask(k) for k in key):
        out = data_dependent(ctx, "boolean mask", lambda a, *k: a[k], (x, *key), {},
                             what="a boolean mask selects a number of elements that depends on the data")
        out._dtype = x.dtype  # a copy of the elements, in x's byte order
        return out
    if any(isinstance(k, (Tracer, np.ndarray)) and np.dtype(k.dtype).kind not in "iu" for k in key):
        raise RunForReal(key)  # NumPy's IndexError for float indices
    _check_bounds(ctx, x.shape, key)
    nodes, slots = _index_arrays(ctx, key)
    b = ctx.builder
    shape = advanced_shape(x.shape, tuple(slots), [b.aval(n) for n in nodes])

    def call(xp, a, *idx):
        return a[fill(tuple(slots), idx)]

    node = b.opaque(OpaqueFn("getitem", call), [x._node, *nodes], Aval(shape, x.aval.dtype), (), ctx.loc())
    # a copy of the elements, in x's byte order; a 0-d result (`x[np.array(2)]`) is a
    # NumPy scalar, as NumPy returns one there (not with an Ellipsis: `x[np.array(2), ...]`)
    scalar = not ctx.uses_cupy and not any(k is Ellipsis for k in key)
    return wrap(ctx, node, dtype=x.dtype, scalar=scalar)


def value_into(ctx: TraceContext, value: Any, dt: np.dtype, how: str) -> int:
    """The node of `value` as NumPy stores it into an array of dtype `dt` by `how`
    ('setitem', 'fill'). A scalar converts as NumPy converts it there, which depends on
    its value (NaN into an int32 array is NumPy's ValueError, 300 into int8 its
    OverflowError, 1+2j into floats its TypeError): a concrete one now, one computed in
    the cell at a graph break where its value could fail so. An array casts, with
    NumPy's ComplexWarning from complex to real."""
    b, loc = ctx.builder, ctx.loc()
    concrete_scalar = not isinstance(value, Tracer) and (type(value) in (bool, int, float, complex)
                                                         or isinstance(value, np.generic))
    if ctx.uses_cupy:
        # CuPy stores a Python or NumPy scalar through NumPy's scalar conversion (NaN into
        # int32 is its ValueError, 300.0 into int8 its OverflowError, 1+2j into floats its
        # TypeError: plain CuPy on the H200, 2026-12-04); the rest its own way, as before
        if concrete_scalar:
            return b.const(convert_scalar(ctx, value, dt, how), dt, loc)
        v = operand(ctx, value)
        if isinstance(v, Weak):
            check_fits(v.value, dt)
            return b.const(v.value, dt, loc)
        return b.astype(v, dt, loc)
    if concrete_scalar:
        return b.const(convert_scalar(ctx, value, dt, how), dt, loc)
    v = operand(ctx, value)
    if isinstance(v, Weak):
        return b.const(convert_scalar(ctx, v.value, dt, how), dt, loc)
    src = b.aval(v).dtype
    if isinstance(value, Tracer) and value._scalar and dt.kind in "iu" and \
            (src.kind == "f" or (src.kind in "iu" and not np.can_cast(src, dt))):
        got = ctx.need(v, "storing a NumPy scalar into an integer array can fail on its value")
        return b.const(convert_scalar(ctx, got[()], dt, how), dt, loc)
    if src.kind == "c" and dt.kind != "c":
        ctx.warn("Casting complex values to real discards the imaginary part", np.exceptions.ComplexWarning)
    return b.astype(v, dt, loc)  # NumPy casts the value into the array's dtype


def setitem(ctx: TraceContext, x: Tracer, key: Any, value: Any) -> None:
    """x[key] = value: the tracer takes the updated array's node."""
    if x._scalar:
        raise TypeError(f"'numpy.{x.dtype.type.__name__}' object does not support item assignment")
    key = key if isinstance(key, tuple) else (key,)
    # a slice's bounds are Python integers to NumPy (`x[:j] = 0` with j computed: its
    # __index__, a graph break), never a tracer kept in the graph's setitem
    key = tuple(slice(*(operator.index(c) if isinstance(c, Tracer) else c for c in (k.start, k.stop, k.step)))
                if isinstance(k, slice) and any(isinstance(c, Tracer) for c in (k.start, k.stop, k.step)) else k
                for k in key)
    b, loc = ctx.builder, ctx.loc()
    dt = x.aval.dtype
    basic = all(_is_basic(k) for k in key)
    # NumPy checks the index before it converts the value (`i32[5] = np.nan`: IndexError)
    target = getitem(ctx, Tracer(ctx, x._node), key) if basic else None
    if not basic:
        _check_bounds(ctx, x.shape, key)
    vnode = value_into(ctx, value, dt, "setitem")
    vshape = b.aval(vnode).shape
    mask = key[0] if len(key) == 1 else None
    if isinstance(mask, (Tracer, np.ndarray)) and np.dtype(mask.dtype) == np.bool_ and mask.shape == x.shape \
            and not vshape:
        # x[mask] = scalar is an element-wise choice: it fuses
        node = b.where(node_of(ctx, mask), vnode, x._node, loc)
    else:
        if target is not None:
            if broadcast_shapes(vshape, target.shape) != target.shape:
                raise RunForReal(value)  # NumPy's "could not broadcast" error
        elif any(isinstance(k, (Tracer, np.ndarray)) and np.dtype(k.dtype) == np.bool_ for k in key) and vshape:
            raise RunForReal(key)  # the value must match a data-dependent count
        nodes, slots = _index_arrays(ctx, key)
        if target is None and not any(_is_mask(k) for k in key):
            # the value broadcasts to the indexed elements' shape, or NumPy's "shape
            # mismatch" ValueError at this line (not when the plan runs)
            got = advanced_shape(x.shape, tuple(slots), [b.aval(n) for n in nodes])
            if broadcast_shapes(vshape, got) != got:
                raise RunForReal(value)

        def call(xp, a, val, *idx):
            out = a.copy()
            out[fill(tuple(slots), idx)] = val
            return out

        node = b.opaque(OpaqueFn("setitem", call), [x._node, vnode, *nodes], x.aval, (), loc)
    update_in_place(ctx, x, node, "item assignment (x[...] = v)")
