"""What a traced cell sees in place of its namespace: its arrays as tracers, `np` / `cp`
as proxies whose functions record nodes when given tracers (and are the real module's
otherwise), the notebook's own functions re-bound to read the traced namespace,
`cupy.fuse` functions and CuPy kernels traced through or run as opaque nodes, and Numba
functions (`numba.vectorize`, `@njit`) traced through their body with Numba's types
(numba_calls.py), and NumPy random Generators whose methods run for real when given
tracers (TracedRandom)."""
from __future__ import annotations

from types import FunctionType, ModuleType
from typing import Any, Callable, Mapping

import numpy as np

from ..ops import UFUNC_OPS
from ..errors import TraceError
from .core import TraceContext, active, current, mentions_tracer, traceable
from .foreign import kind_of
from .numba_calls import TracedNumba, is_numba_callable
from .opaque import data_dependent
from .pybuiltins import real_builtin, traced_builtins
from .realrun import run_for_real
from .registry import call_function
from .ufuncs import dispatch_ufunc

# creation functions are traced even without tracer arguments (they are fusable sources)
_CREATION = frozenset({"zeros", "ones", "empty", "full", "arange"})


class TracingModule:
    """Stands in for numpy / cupy (and their submodules) while a cell is traced."""

    def __init__(self, module: ModuleType, path: str = "") -> None:
        self._module = module
        self._path = path

    def __repr__(self) -> str:
        return repr(self._module)

    def __dir__(self) -> list[str]:
        return dir(self._module)

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._module, name)
        path = f"{self._path}.{name}" if self._path else name
        if isinstance(real, ModuleType):
            return TracingModule(real, path)
        if isinstance(real, np.ufunc) or (name in UFUNC_OPS and not self._path and callable(real)):
            return TracedUfunc(real, name)
        if not callable(real) or isinstance(real, type):
            return real

        def traced(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _unwrapped_all(args, kwargs)
            if not (mentions_tracer(args) or mentions_tracer(kwargs.values())) and path not in _CREATION:
                return traced_random(real(*args, **kwargs))   # (np.random.default_rng(1): traced too)
            if name == "fuse" and not self._path:  # cp.fuse as a decorator inside the cell
                return real(*args, **kwargs)
            ctx = current()
            top = self._module.__name__.split(".")[0]
            if path in _CREATION and top == "cupy" and not ctx.uses_cupy:
                ctx.use_cupy(self._module.ndarray)  # cp.arange(...) in a cell without CuPy inputs
            if path in _CREATION and top == "numpy" and ctx.uses_cupy and not mentions_tracer(args) \
                    and not mentions_tracer(kwargs.values()):
                return real(*args, **kwargs)   # numpy.zeros(3) in a CuPy cell: a NumPy array, in host memory
            return call_function(ctx, path, real, args, kwargs)
        traced.__name__ = name
        traced.__doc__ = getattr(real, "__doc__", None)
        traced.__wrapped__ = real  # type: ignore[attr-defined]
        traced._fuselab_real = real  # type: ignore[attr-defined]   (bound back as the real function)
        return traced


class TracedUfunc:
    """np.exp / cp.exp inside a traced cell: records when given a tracer; `.reduce` too."""

    def __init__(self, real: Any, name: str) -> None:
        self._real = real
        self.__name__ = name

    def __repr__(self) -> str:
        return repr(self._real)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if mentions_tracer(args) or mentions_tracer(kwargs.values()):
            return dispatch_ufunc(current(), self._real, "__call__", args, kwargs, self.__name__)
        return _plain_ufunc_call(self._real, args, kwargs, self.__name__)

    def _method(self, method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if mentions_tracer(args) or mentions_tracer(kwargs.values()):
                return dispatch_ufunc(current(), self._real, method, args, kwargs, self.__name__)
            # NumPy names reduce / accumulate / reduceat in the message, else the ufunc
            label = method if method in ("reduce", "accumulate", "reduceat") else self.__name__
            return _plain_ufunc_call(getattr(self._real, method), args, kwargs, label)
        return call

    def __getattr__(self, attr: str) -> Any:
        if attr in ("reduce", "accumulate", "outer", "reduceat", "at"):
            return self._method(attr)
        return getattr(self._real, attr)


def _plain_ufunc_call(fn: Callable[..., Any], args: Any, kwargs: Any, label: str) -> Any:
    """A NumPy ufunc called on plain arrays in a traced cell (`np.add(a, b, out=a)` on
    an array a graph break computed). NumPy would give its floating-point warnings from
    the Python frame that called the ufunc, which is this module's here, not the user's
    line as in plain execution: the kinds np.errstate sets to "warn" come back through an
    errstate callback and join the cell's warnings at the user's line, in program order.
    Other modes ("raise", "ignore", ...) act as they are."""
    warn = [k for k, mode in np.geterr().items() if mode == "warn"]
    if not warn or not isinstance(getattr(fn, "__self__", fn), np.ufunc):
        return fn(*args, **kwargs)
    try:
        ctx = current()
    except RuntimeError:   # called after its cell's trace (a function the cell defined)
        return fn(*args, **kwargs)
    errors: list[str] = []
    with np.errstate(**{k: "call" for k in warn}, call=lambda kind, _flag: errors.append(kind)):
        out = fn(*args, **kwargs)
    for kind in errors:
        ctx.library_warning(f"{kind} encountered in {label}", RuntimeWarning)
    return out


_RANDOM_TYPES = (np.random.Generator, np.random.RandomState)


def _is_random(v: Any) -> bool:
    """A NumPy or CuPy Generator / RandomState (CuPy's by name: importing CuPy costs)."""
    t = type(v)
    return t in _RANDOM_TYPES or ((getattr(t, "__module__", "") or "").startswith("cupy.random")
                                  and t.__name__ in ("Generator", "RandomState"))


class TracedRandom:
    """A NumPy (or CuPy) Generator / RandomState in a traced cell. Its methods are the object's
    own (the same stream of numbers); one given tracers (`rng.random(out=o)`,
    `rng.shuffle(a)`, `rng.permutation(a)`, `rng.normal(a.mean())`) runs for real on the
    arrays plain execution has there (realrun.run_for_real: the notebook's own array,
    writeable, its changes seen by the trace), not on a tracer NumPy would take for a
    read-only array or a Python sequence. isinstance sees the real class."""

    __slots__ = ("_real",)

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_real", real)

    @property
    def __class__(self) -> type:  # type: ignore[override]
        return type(self._real)

    def __repr__(self) -> str:
        return repr(self._real)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if name.startswith("_") or not callable(attr) or isinstance(attr, type):
            return attr
        what = f"{type(self._real).__name__}.{name}"

        def method(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = _unwrapped_all(args, kwargs)
            ctx = active()
            if ctx is not None and (mentions_tracer(args) or mentions_tracer(kwargs.values())):
                return run_for_real(ctx, what, attr, args, kwargs)
            return attr(*args, **kwargs)
        method.__name__ = name
        method.__doc__ = getattr(attr, "__doc__", None)
        return method


def traced_random(v: Any, ctx: TraceContext | None = None) -> Any:
    """A Generator / RandomState as the traced cell sees it: one TracedRandom per object
    (so `np.random.default_rng(rng) is rng` holds); else `v`."""
    if not _is_random(v):
        return v
    ctx = ctx or active()
    if ctx is None:
        return v
    proxies = ctx.__dict__.setdefault("_traced_random", {})   # id(object) -> its proxy (which keeps it)
    if id(v) not in proxies:
        proxies[id(v)] = TracedRandom(v)
    return proxies[id(v)]


def _unwrapped_all(args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The arguments with the real Generator behind each TracedRandom (NumPy's C code
    takes no stand-in: np.random.default_rng(rng) is rng)."""
    if not any(type(v) is TracedRandom for v in (*args, *kwargs.values())):
        return args, kwargs
    def real(v: Any) -> Any:
        return v._real if type(v) is TracedRandom else v
    return tuple(real(a) for a in args), {k: real(v) for k, v in kwargs.items()}


def _is_cupy_fusion(v: Any) -> bool:
    t = type(v)
    return t.__name__ == "Fusion" and t.__module__.startswith("cupy") and hasattr(v, "func")


class TracedFusion:
    """A cupy.fuse function: traced through its Python body, so two of them composed
    become one graph fuselab can fuse across."""

    def __init__(self, fusion: Any, func: Callable[..., Any] | None = None) -> None:
        self._fusion = fusion
        self.func = func or fusion.func
        self.__name__ = getattr(fusion, "name", None) or getattr(self.func, "__name__", "fused")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if mentions_tracer(args):
            return self.func(*args, **kwargs)
        return self._fusion(*args, **kwargs)


def _is_cupy_kernel(v: Any) -> bool:
    t = type(v)
    return t.__module__.startswith("cupy") and t.__name__ in ("ElementwiseKernel", "ReductionKernel", "RawKernel")


class TracedLibraryKernel:
    """ElementwiseKernel / ReductionKernel objects: run now (their result's dtype comes
    from the kernel's own type rules), an opaque node that runs the kernel again."""

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self.__name__ = getattr(kernel, "name", "kernel")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not mentions_tracer(args):
            return self._kernel(*args, **kwargs)
        ctx = current()
        if type(self._kernel).__name__ == "RawKernel":
            raise ctx.refuse("a RawKernel writes into its arguments, which %%fuse cannot trace",
                             "launch it in a cell before or after the %%fuse cell")
        return data_dependent(ctx, self.__name__, lambda *a: self._kernel(*a, **kwargs), args, {},
                              f"the CuPy kernel `{self.__name__}` runs here (fuselab does not read its code)")


def with_globals(fn: FunctionType, globals_: dict[str, Any]) -> FunctionType:
    """The same function reading its globals from another dict."""
    new = FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__module__ = fn.__module__
    return new


def _is_array_module(v: Any) -> bool:
    return isinstance(v, ModuleType) and (v.__name__ in ("numpy", "cupy", "dask.array") or
                                           v.__name__.startswith(("numpy.", "cupy.", "dask.array.")))


def _module_path(name: str) -> str:
    """'linalg' for numpy.linalg, cupy.linalg and dask.array.linalg; '' for the top."""
    for top in ("dask.array", "numpy", "cupy"):
        if name == top or name.startswith(top + "."):
            return name[len(top) + 1:]
    return name


def tracing_namespace(ctx: TraceContext, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the user's namespace with arrays as tracers and np/cp as proxies.

    Functions defined in the notebook (their globals are the namespace) are re-bound to
    this copy, so a helper from an earlier cell traces exactly like one defined in the
    cell: its `cp.exp(a)` and the global arrays it reads are traced too."""
    ns: dict[str, Any] = {}
    adopted: dict[int, Any] = {}    # id(the user's GPU object) -> the CuPy array on its memory
    for k, v in namespace.items():
        kind = None if traceable(v) else kind_of(v)
        if kind is not None:   # a torch CUDA tensor, a Numba device array...: a CuPy array, no copy
            if id(v) not in adopted:
                try:
                    adopted[id(v)] = kind.adopt(v)
                except Exception as e:  # noqa: BLE001 - whatever the library says, said at once
                    raise TraceError(f"`{k}` is a {kind.name} GPU array fuselab cannot use without a copy "
                                     f"({type(e).__name__}: {e})", None,
                                     "pass it as a CuPy array (cupy.asarray(x)), or compute it in a plain cell") \
                        from None
                ctx.adopted[id(adopted[id(v)])] = (v, kind)
            ns[k] = ctx.tracer_for(adopted[id(v)], k)
        elif traceable(v):
            ns[k] = ctx.tracer_for(v, k)  # one tracer per array object: aliases stay aliases
        elif _is_array_module(v):
            ns[k] = TracingModule(v, _module_path(v.__name__))
        elif isinstance(v, FunctionType) and v.__globals__ is namespace:
            ns[k] = with_globals(v, ns)
            ctx.originals[id(ns[k])] = v
        elif _is_cupy_fusion(v):
            f = v.func
            ns[k] = TracedFusion(v, with_globals(f, ns) if getattr(f, "__globals__", None) is namespace else f)
        elif _is_cupy_kernel(v):
            ns[k] = TracedLibraryKernel(v)
        elif is_numba_callable(v):
            ns[k] = TracedNumba(v)
        elif _is_random(v):
            ns[k] = traced_random(v, ctx)
        else:
            ns[k] = v
    ns["__builtins__"] = traced_builtins(namespace)   # (`type(x)` answers as for NumPy's array)
    ns["__builtins__"]["__import__"] = _traced_import(ns["__builtins__"]["__import__"])
    return ns


def _traced_import(real_import: Callable[..., Any]) -> Callable[..., Any]:
    """`import numpy` / `from numpy import asarray` inside the cell: the module is the
    proxy the namespace's `np` is (np.asarray(x) is x, np.array(x, copy=False) a view),
    not the real module, whose functions would see tracers as foreign objects."""
    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        mod = real_import(name, globals, locals, fromlist, level)
        return TracingModule(mod, _module_path(mod.__name__)) if _is_array_module(mod) else mod
    return __import__


def untraced(value: Any, ctx: TraceContext) -> Any:
    """The real object behind a proxy, for binding back into the user's namespace."""
    if id(value) in ctx.originals:
        return ctx.originals[id(value)]
    if isinstance(value, TracingModule):
        return value._module
    if isinstance(value, TracedUfunc):
        return value._real
    if isinstance(value, TracedFusion):
        return value._fusion
    if isinstance(value, TracedLibraryKernel):
        return value._kernel
    if isinstance(value, TracedNumba):
        return value._fn
    if type(value) is TracedRandom:
        return value._real
    if isinstance(value, FunctionType) and hasattr(value, "_fuselab_real"):   # (`from numpy import asarray`)
        return value._fuselab_real
    return real_builtin(value)
