"""GPU arrays of other libraries as a cell's inputs: PyTorch CUDA tensors, Numba CUDA
device arrays, and anything exporting `__cuda_array_interface__` or a CUDA DLPack
capsule. Each is adopted as a CuPy array on the same memory (no copy), traced and run as
CuPy inputs are (the CUDA backend; the cell's operations follow NumPy's rules, as for
CuPy arrays), and the cell's results are handed back as the inputs' kind: torch in,
torch out; a Numba device array in, Numba device arrays out. An input the cell only
names, aliases or updates in place is the user's own object afterwards.

A kind is (detect, adopt, give back); `KINDS` lists them in the order they are tried, and
tests add kinds of their own. Nothing here imports torch, Numba or CuPy until an object
of theirs is met.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

_DLPACK_CUDA = (2, 13)    # kDLCUDA, kDLCUDAManaged


@dataclass(frozen=True)
class Kind:
    name: str
    detect: Callable[[Any], bool]
    adopt: Callable[[Any], Any]                   # the object as an array fuselab traces (no copy)
    give_back: Callable[[Any], Any] | None        # an array result as this kind (no copy); None: CuPy's


def _module_of(v: Any) -> str:
    return type(v).__module__ or ""


def _is_torch_cuda(v: Any) -> bool:
    return _module_of(v).startswith("torch") and getattr(v, "is_cuda", False) is True


def _adopt_torch(v: Any) -> Any:
    if getattr(v, "requires_grad", False):
        raise TypeError("a tensor that requires grad: fuselab runs no autograd; pass x.detach()")
    import cupy
    return cupy.from_dlpack(v)       # DLPack: the tensor's stream is waited for


def _torch_back(a: Any) -> Any:
    import torch
    return torch.from_dlpack(a)


def _is_numba_device_array(v: Any) -> bool:
    return _module_of(v).startswith("numba.cuda") and hasattr(v, "__cuda_array_interface__")


def _numba_back(a: Any) -> Any:
    import cupy
    from numba import cuda
    cupy.cuda.get_current_stream().synchronize()   # Numba reads no stream from the interface
    return cuda.as_cuda_array(a)     # keeps the CuPy array (the memory's owner) alive


def _is_cupy(v: Any) -> bool:
    return _module_of(v).startswith("cupy")


def _has_cai(v: Any) -> bool:
    return not _is_cupy(v) and hasattr(type(v), "__cuda_array_interface__")


def _adopt_cai(v: Any) -> Any:
    import cupy
    return cupy.asarray(v)           # zero-copy: CuPy wraps the interface's pointer


def _has_cuda_dlpack(v: Any) -> bool:
    if _is_cupy(v) or not (hasattr(v, "__dlpack__") and hasattr(v, "__dlpack_device__")):
        return False
    try:
        return v.__dlpack_device__()[0] in _DLPACK_CUDA
    except Exception:  # noqa: BLE001 - an object that cannot say is not one
        return False


def _adopt_dlpack(v: Any) -> Any:
    import cupy
    return cupy.from_dlpack(v)


KINDS: list[Kind] = [
    Kind("torch", _is_torch_cuda, _adopt_torch, _torch_back),
    Kind("numba", _is_numba_device_array, _adopt_cai, _numba_back),
    Kind("cuda_array_interface", _has_cai, _adopt_cai, None),
    Kind("dlpack", _has_cuda_dlpack, _adopt_dlpack, None),
]


def kind_of(v: Any) -> Kind | None:
    """The foreign kind of `v`, or None (NumPy and CuPy arrays, and everything else)."""
    if type(v).__module__ in ("numpy", "builtins"):
        return None
    for k in KINDS:
        try:
            if k.detect(v):
                return k
        except Exception:  # noqa: BLE001 - a detector failing means "not this kind"
            continue
    return None


@dataclass
class Adopted:
    """The foreign objects of one trace: id(adopted array) -> (the user's object, kind)."""

    objects: dict[int, tuple[Any, Kind]]

    def result_kind(self, used: Iterable[Any]) -> Kind | None:
        """The kind results are given back as: the one kind of the adopted inputs the
        graph reads (None when they are of several kinds, or there are none: results
        then stay the array module's)."""
        kinds = {self.objects[id(a)][1].name: self.objects[id(a)][1] for a in used if id(a) in self.objects}
        return next(iter(kinds.values())) if len(kinds) == 1 else None

    def exporter(self, used: Iterable[Any], is_result_array: Callable[[Any], bool]) -> Callable[[Any], Any]:
        """value -> the value the namespace gets: an adopted array is the user's own
        object, an array result the result kind's (aliases stay aliases: converted once)."""
        kind = self.result_kind(used)
        made: dict[int, Any] = {}

        def export(v: Any) -> Any:
            if id(v) in self.objects:
                return self.objects[id(v)][0]
            if kind is None or kind.give_back is None or not is_result_array(v):
                return v
            if id(v) not in made:
                made[id(v)] = (v, kind.give_back(v))   # (v kept: ids stay unique while we convert)
            return made[id(v)][1]
        return export
