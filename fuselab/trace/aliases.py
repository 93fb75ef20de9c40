"""Arrays of the notebook that share memory (`v = a[2:]`, `at = a.T`, `m = a.reshape(2, 3)`,
a list of slices of one array): NumPy has one memory, and every name is a view of it, so a
write through one name is read through the others. The trace does the same: once two
arrays of one memory are traced, the array that owns the memory (the end of their `.base`
chains) is the input, and each of them is the view of it that NumPy has — the reshape,
slices and transpose that make exactly its offset, shape and strides (checked on the real
arrays). A write into one then writes through into the owner and refreshes the others
(mutate.update_in_place), and only the owner is written back after the run.

Where an array of that memory is not such a view (another dtype, a field of a structured
array, an unrelated buffer over the same bytes), it stays an input of its own, which is
right as long as nothing writes the bytes it shares: a write into them after it was read,
or a read of it after such a write, is refused with a clear error (the two names would
disagree), never a stale value."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..interp import slice_key

if TYPE_CHECKING:
    from .core import InputTracer, TraceContext

Step = tuple  # ("reshape", shape) | ("slice", starts, steps, lengths) | ("transpose", perm) | ("broadcast_to", shape)


@dataclass
class Memory:
    """The traced arrays over one memory. Ids only (arrays are found through the
    context's tracers): a tracer held here would look like one the cell left somewhere."""

    owner: np.ndarray
    arrays: list[int] = field(default_factory=list)     # id(array) of each traced array, in order
    opaque: list[int] = field(default_factory=list)     # those that are not views of the owner
    shared: bool = False                                # two or more traced: the owner is the input


def _is_cupy(a: Any) -> bool:
    t = type(a)
    return t.__name__ == "ndarray" and t.__module__.split(".")[0] == "cupy"


def aliasable(a: Any) -> bool:
    """Arrays whose views the trace follows: NumPy's and CuPy's (one device memory, the
    same `.base` chains and byte strides). Dask arrays and adopted GPU arrays of other
    libraries stay inputs of their own."""
    return type(a) is np.ndarray or _is_cupy(a)


def _xp(a: Any) -> Any:
    return sys.modules["cupy"] if _is_cupy(a) else np


def owner_of(arr: np.ndarray) -> np.ndarray:
    """The array at the end of the `.base` chain: the one whose memory the others view."""
    base_type = _xp(arr).ndarray
    while isinstance(arr.base, base_type):
        arr = arr.base
    return arr


def _address(a: np.ndarray) -> int:
    return a.data.ptr if _is_cupy(a) else a.__array_interface__["data"][0]


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, k = [], 1
    for d in reversed(shape):
        out.append(k)
        k *= d
    return tuple(reversed(out))


def _candidate_shapes(owner: np.ndarray, dims: list[tuple[int, int, int]]) -> list[tuple[int, ...]]:
    """Shapes of the owner to take slices of: its own, and (a C-contiguous owner, where a
    reshape is a view) the one whose C strides are the view's, and the flat one."""
    out = [owner.shape]
    if owner.flags.c_contiguous:
        n = owner.size
        ts = sorted({abs(s) for _, _, s in dims} | {1}, reverse=True)
        if n % ts[0] == 0 and all(a % b == 0 for a, b in zip(ts, ts[1:])):
            out.append(tuple([n // ts[0]] + [a // b for a, b in zip(ts, ts[1:])]))
        out.append((n,))
    return list(dict.fromkeys(out))


def _steps_for(owner: np.ndarray, shape: tuple[int, ...], offset: int, dims: list[tuple[int, int, int]],
               target: tuple[int, ...]) -> list[Step] | None:
    """The view ops taking `target` (its dims of length > 1: (axis, length, stride)) out of
    the owner seen with `shape`, or None."""
    strides = tuple(s // owner.itemsize for s in owner.strides) if shape == owner.shape else _c_strides(shape)
    if any(s < 0 for s in strides):
        return None
    order = sorted(range(len(shape)), key=lambda j: -strides[j])
    start, rem = [0] * len(shape), offset
    for j in order:   # the first element's index along each dimension
        if strides[j]:
            start[j], rem = divmod(rem, strides[j])
    if rem or any(not 0 <= s < max(d, 1) for s, d in zip(start, shape)):
        return None
    step, length, used = [1] * len(shape), [1] * len(shape), {}
    for axis, n, s in dims:
        free = [j for j in order if j not in used.values() and strides[j] and abs(s) % strides[j] == 0
                and 0 <= start[j] + (n - 1) * (s // strides[j]) < shape[j]]
        if not free:
            return None
        j = free[0]
        used[axis] = j
        step[j], length[j] = s // strides[j], n
    steps: list[Step] = []
    if shape != owner.shape:
        steps.append(("reshape", shape))
    if tuple(start) != (0,) * len(shape) or tuple(step) != (1,) * len(shape) or tuple(length) != shape:
        steps.append(("slice", tuple(start), tuple(step), tuple(length)))
    perm = tuple(used[a] for a, _, _ in dims) + tuple(j for j in range(len(shape)) if j not in used.values())
    if perm != tuple(range(len(shape))):
        steps.append(("transpose", perm))
    if tuple(length[j] for j in perm) != target:
        steps.append(("reshape", target))   # only lengths of 1 added or dropped: a view
    return steps


def apply_steps(a: Any, steps: list[Step]) -> Any:
    for s in steps:
        if s[0] == "reshape":
            a = a.reshape(s[1])
        elif s[0] == "slice":
            a = a[slice_key(s[1], s[2], s[3])]
        elif s[0] == "broadcast_to":
            a = _xp(a).broadcast_to(a, s[1])
        else:
            a = a.transpose(s[1])
    return a


def view_steps(owner: np.ndarray, arr: np.ndarray) -> list[Step] | None:
    """How `arr` is a view of `owner` in the graph's view ops, or None where it is not one
    (another dtype, a broadcast, memory outside the owner's, strides no slice gives)."""
    if arr.dtype != owner.dtype or arr.size == 0 or owner.size == 0:
        return None
    isz = arr.itemsize
    offset = _address(arr) - _address(owner)
    if offset % isz or any(s % isz for n, s in zip(arr.shape, arr.strides) if n > 1):
        return None
    dims = [(i, n, s // isz) for i, (n, s) in enumerate(zip(arr.shape, arr.strides)) if n > 1]
    # a broadcast (np.broadcast_to(a, ...)): the view of length 1 there, then broadcast
    spread = [i for i, _, s in dims if s == 0]
    dims = [d for d in dims if d[2] != 0]
    target = tuple(1 if i in spread else n for i, n in enumerate(arr.shape))
    for shape in _candidate_shapes(owner, dims):
        if math.prod(shape) != owner.size:
            continue
        steps = _steps_for(owner, shape, offset // isz, dims, target)
        if steps is None:
            continue
        if spread:
            steps.append(("broadcast_to", arr.shape))
        try:
            v = apply_steps(owner, steps)
        except ValueError:
            continue
        if v.shape == arr.shape and _address(v) == _address(arr) and \
                all(a == b for n, a, b in zip(arr.shape, v.strides, arr.strides) if n > 1):
            return steps
    return None


class Aliases:
    """The memories of the arrays a trace reads (TraceContext.aliases)."""

    def __init__(self, ctx: "TraceContext") -> None:
        self.ctx = ctx
        self.memories: dict[int, Memory] = {}     # id(owner) -> its memory
        self._of: dict[int, Memory] = {}          # id(traced array) -> its memory
        self._steps: dict[int, list[Step]] = {}   # id(array) -> its view ops of the owner, until taken

    def joined(self, t: "InputTracer") -> None:
        """`t` is the tracer of an array just met: if another traced array shares its
        memory, both (and every later one) become views of the memory's owner."""
        arr = t._array
        if not aliasable(arr):
            return   # Dask, adopted GPU arrays of other libraries: each an input of its own
        owner = owner_of(arr)
        m = self.memories.get(id(owner))
        if m is None:
            # unrelated buffers over the same bytes (np.frombuffer(memoryview(a)))
            m = next((o for o in self.memories.values() if type(o.owner) is type(owner)
                      and (owner.base is not None or o.owner.base is not None)
                      and _xp(owner).may_share_memory(owner, o.owner)), None) or Memory(owner)
            self.memories[id(owner)] = m
        m.arrays.append(id(arr))
        self._of[id(arr)] = m
        if len(m.arrays) < 2:
            return
        if not m.shared:
            m.shared = True
            for i in m.arrays[:-1]:
                self._join(m, self.ctx._tracer_by_id[i])
        self._join(m, t)

    def _join(self, m: Memory, t: "InputTracer") -> None:
        """`t` becomes the view of the owner NumPy has; an array not read yet only when it
        is first read (`pending`: a cell that never reads it adds nothing to the graph)."""
        arr = t._array
        if arr is m.owner or arr.size == 0:
            return
        root = self._root(m, t._name)
        steps = view_steps(m.owner, arr) if root is not None else None
        if steps is None:   # its reads and writes are checked against the others' (check_write, reading)
            m.opaque.append(id(arr))
            return
        self._steps[id(arr)] = steps
        if t._input is None and t._cur is None:
            object.__setattr__(t, "_alias", "pending")
        else:
            self.express(t)

    def _root(self, m: Memory, name: str | None) -> "InputTracer | None":
        """The owner's tracer (made here when the owner is no name of the notebook's)."""
        from .core import InputTracer, traceable
        ctx = self.ctx
        root = ctx._tracer_by_id.get(id(m.owner))
        if root is None and traceable(m.owner):
            root = InputTracer(ctx, m.owner, ctx._names_by_id.get(id(m.owner)) or f"{name or 'arr'}_base")
            ctx._tracer_by_id[id(m.owner)] = root
            self._of[id(m.owner)] = m
        return root

    def express(self, t: "InputTracer") -> None:
        """Make `t` the view of its owner's tracer (as it is now) in the graph."""
        from .mutate import _write_through, add_view, update_in_place
        ctx, arr = self.ctx, t._array
        root = ctx._tracer_by_id[id(self._of[id(arr)].owner)]
        steps = self._steps.pop(id(arr))
        object.__setattr__(t, "_alias", "view")
        b, cur = ctx.builder, root._node
        for s in steps:
            cur = b.reshape(cur, s[1]) if s[0] == "reshape" else b.transpose(cur, s[1]) if s[0] == "transpose" \
                else b.broadcast_to(cur, s[1]) if s[0] == "broadcast_to" else b.slice(cur, s[1], s[2], s[3])
        chain = _chain(ctx, cur, root._node)
        if t._cur is not None and t._input is not None and t._cur != t._input:
            # written before a second array of its memory was met: the owner takes the write
            new = _write_through(ctx, root, chain, t._cur)
            if new is None:
                raise self._refusal(t)
            update_in_place(ctx, root, new, "the update")
        if t._cur is None:
            # (an array read already keeps its node, the same values, so the views taken of
            # it stay views of it)
            object.__setattr__(t, "_cur", t._input if t._input is not None else cur)
        t._origin = ("view", root, ctx.versions.get(id(root), 0), chain)
        add_view(root, t)

    # -- arrays of one memory that are no views of its owner ------------------------
    def _others(self, m: Memory, t: "InputTracer") -> list["InputTracer"]:
        """The other traced arrays of m's memory whose bytes overlap t's (`s['x']` and
        `s['y']` of one structured array share a memory, not an element)."""
        ts = self.ctx._tracer_by_id
        out = []
        for i in dict.fromkeys([*m.arrays, id(m.owner)]):
            o = ts.get(i)
            if o is not None and o is not t and _overlap(o._array, t._array):
                out.append(o)
        return out

    def _read(self, m: Memory, t: "InputTracer") -> bool:
        """Has the graph read (an input node of) an array whose bytes overlap t's?"""
        return any(o._input is not None for o in self._others(m, t))

    def _written(self, m: Memory, t: "InputTracer") -> bool:
        return any(o.mutated for o in self._others(m, t))

    def _opaque_memory(self, t: "InputTracer") -> Memory | None:
        m = self._of.get(id(t._array))
        return m if m is not None and m.opaque and m.shared else None

    def reading(self, t: "InputTracer") -> None:
        """The graph reads t's array now: refused if another array over its bytes, which
        is no view of it, was written already (t's input would not show that)."""
        m = self._opaque_memory(t)
        if m is not None and self._written(m, t):
            raise self._refusal(t)

    def check_write(self, t: "InputTracer") -> None:
        """`t`'s memory is about to change: refused where the graph read another array over
        its bytes that is no view of the owner (that array would not show the write)."""
        m = self._opaque_memory(t)
        if m is None:
            return
        if id(t._array) in m.opaque:
            if self._read(m, t):
                raise self._refusal(t)
            return
        for o in self._others(m, t):
            if id(o._array) in m.opaque and o._input is not None:
                raise self._refusal(o)

    def _refusal(self, t: "InputTracer") -> BaseException:
        name = f"`{t._name}`" if t._name else "an array"
        return self.ctx.refuse(
            f"{name} shares memory with another array this cell uses, but is not a view of it %%fuse can "
            "express (another dtype, overlapping buffers), and the cell writes into that memory: NumPy would "
            "show the write through both names, which %%fuse cannot follow",
            "copy one of them first (x = x.copy()) if they need not share memory, or run this cell without %%fuse")


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    if type(a) is not type(b):
        return False   # (host and device memory)
    if _is_cupy(a):
        return bool(_xp(a).may_share_memory(a, b))   # bounds: as if they did where they might
    try:
        return bool(np.shares_memory(a, b, max_work=100_000))
    except np.exceptions.TooHardError:
        return True   # (too costly to tell: as if they did)


def _chain(ctx: "TraceContext", node: int, base: int) -> tuple:
    nodes, out = ctx.builder.nodes, []
    while node != base:
        out.append(nodes[node])
        node = nodes[node].inputs[0]
    return tuple(reversed(out))

