"""Memory layouts of new arrays, as NumPy chooses them, and binding values with them.

A new array NumPy makes is contiguous in some order of its axes: C for np.zeros and
x.copy(), the operands' order for an element-wise result ('K': `a.T * 2` and arithmetic
on a Fortran-ordered array are Fortran-ordered), the prototype's for np.empty_like. A
tracer records that order (`Tracer._order`, outermost axis first; None where the value's own layout is
NumPy's, as for a library function's result); the
graph's values may come out in any layout (a kernel writes C order, a copy node is its
source's node), so a value Python sees or a name binds is given that layout here.

Pure functions of shapes and strides (in elements), with no tracing state.
"""
from __future__ import annotations

from typing import Any, Sequence

Layout = tuple[tuple[int, ...], tuple[int, ...]]   # (shape, strides in elements)
Order = tuple[int, ...]                             # axes, outermost first


def strides_in(shape: Sequence[int], order: Order | None) -> tuple[int, ...]:
    """The strides (in elements) of a contiguous array of `shape` laid out in `order`."""
    perm = tuple(order) if order is not None else tuple(range(len(shape)))
    out = [0] * len(shape)
    step = 1
    for ax in reversed(perm):
        out[ax] = step
        step *= max(int(shape[ax]), 1)
    return tuple(out)


def k_order(shape: Sequence[int], layouts: Sequence[Layout | None]) -> Order | None:
    """The order of axes NumPy's iterator gives a new result of `shape` computed from
    operands with these layouts (None: unknown, left out), after NumPy's
    npyiter_find_best_axis_ordering: a stable insertion sort of the axes by stride, where
    an operand broadcast along an axis (stride 0, or length 1) has no say, and operands
    that disagree leave C order."""
    ndim = len(shape)
    ops = []
    for lay in layouts:
        if lay is None:
            continue
        oshape, ostrides = lay
        lead = ndim - len(oshape)
        if lead < 0:
            return tuple(range(ndim))
        # the operand's strides over the result's axes: 0 where it is broadcast
        ops.append(tuple(0 if i < lead or oshape[i - lead] == 1 or shape[i] == 1 else ostrides[i - lead]
                         for i in range(ndim)))
    if not ops or ndim < 2:
        return tuple(range(ndim))
    perm = list(range(ndim))[::-1]   # NumPy sorts innermost first
    for i0 in range(1, ndim):
        ax0, pos = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            ax1 = perm[i1]
            ambiguous, swap = True, False
            for st in ops:
                if st[ax0] != 0 and st[ax1] != 0:
                    if abs(st[ax1]) <= abs(st[ax0]):
                        swap = False   # (C order wins where operands disagree)
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if not ambiguous:
                if swap:
                    pos = i1
                else:
                    break
        if pos != i0:
            perm[pos + 1:i0 + 1] = perm[pos:i0]
            perm[pos] = ax0
    return tuple(perm[::-1])


def strides_order(ndim: int, order: str) -> Order:
    """The order of axes of a new array made in NumPy's order 'C' or 'F'."""
    c = tuple(range(ndim))
    return c[::-1] if order == "F" else c


def copy_order(ndim: int, layout: Layout | None, order: str) -> Order | None:
    """The order of axes of `x.copy(order)` (np.copy, astype, np.array, *_like) of an
    array of `ndim` axes with this layout: 'K' keeps its memory order, 'A' is Fortran
    for an array Fortran- and not C-contiguous. None: unknown."""
    c = tuple(range(ndim))
    fortran = c[::-1]
    if order == "C":
        return c
    if order == "F":
        return fortran
    if layout is None:
        return None
    if order == "A":
        return fortran if contiguous(layout, fortran) and not contiguous(layout, None) else c
    if order == "K":
        if contiguous(layout, None):
            return c
        if contiguous(layout, fortran):
            return fortran
        return k_order(layout[0], [layout])
    return None


def contiguous(layout: Layout, order: Order | None) -> bool:
    """Is an array of this layout contiguous in `order` (axes of length 1 ignored)?"""
    shape, strides = layout
    if any(d == 0 for d in shape):
        return True
    want = strides_in(shape, order)
    return all(d == 1 or s == w for d, s, w in zip(shape, strides, want))


def value_layout(v: Any) -> Layout | None:
    """The layout of a concrete array (NumPy or CuPy), or None."""
    itemsize = getattr(getattr(v, "dtype", None), "itemsize", 0)
    strides = getattr(v, "strides", None)
    if not itemsize or strides is None:
        return None
    return tuple(v.shape), tuple(s // itemsize for s in strides)


def with_order(xp: Any, v: Any, order: Order | None) -> Any:
    """`v`'s values in a new array contiguous in `order`, or v itself when it already is.
    (Allocated C-ordered in the permuted axis order and transposed back: the same
    strides NumPy gives, on any array library.)"""
    lay = value_layout(v)
    # (contiguous is not enough: a length-1 axis's stride shows too, and NumPy's new
    # array has the one its order gives: (1, 4) C-ordered has strides (4, 1), not (1, 1))
    if lay is None or v.ndim < 2 or (contiguous(lay, order) and (0 in lay[0] or lay[1] == strides_in(lay[0], order))):
        return v
    out = empty_in(xp, tuple(v.shape), v.dtype, order)
    out[...] = v
    return out


def empty_in(xp: Any, shape: tuple[int, ...], dtype: Any, order: Order | None) -> Any:
    """A new array (owning its memory, as NumPy's new arrays do) contiguous in `order`."""
    ndim = len(shape)
    if order is None or tuple(order) == tuple(range(ndim)):
        return xp.empty(shape, dtype=dtype)
    if tuple(order) == tuple(range(ndim))[::-1]:
        return xp.empty(shape, dtype=dtype, order="F")
    inverse = [0] * ndim
    for i, ax in enumerate(order):
        inverse[ax] = i
    # allocated C-ordered in the permuted axis order and transposed back; empty_like
    # ('K' keeps those strides) makes it an array of its own
    return xp.empty_like(xp.empty(tuple(shape[ax] for ax in order), dtype=dtype).transpose(inverse), order="K")
