"""Numba functions called in a traced cell: `numba.vectorize` ufuncs and `@numba.njit`
functions applied to arrays are traced through their Python body, so that fuselab fuses
across them, with Numba's types.

Plain execution runs the body as Numba compiles it, and Numba types a body its own way:
`0.5 * x` of a float32 `x` is a float64 (a Python float is a float64 to Numba, a weak
scalar to NumPy 2), `x + 1` of an int32 is an int64, `np.exp(x) * y` of a float32 array
and a float `y` a float64 array. So the body is not run with tracers under NumPy's
rules: Numba's own type inference types it for the argument types of the call (for a
ufunc: the loop NumPy picks for them), and each operation of Numba's IR becomes the
NumPy operation on operands cast to the types Numba converts them to. Values and dtypes
are then Numba's: the cell behaves as it does in plain execution, fused.

Bodies fuselab cannot follow this way (branches and loops, calls of functions it has no
rule for, `out=` and other keywords, Numba's ZeroDivisionError for a scalar division)
run as Numba compiles them, at a graph break whose reason says why. Importing this
module does not import Numba; tracing a call does.
"""
from __future__ import annotations

import math
import operator
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from ..ops import Aval, OpaqueFn
from .core import TraceContext, Tracer, current, mentions_tracer
from .opaque import _wrap_results, lift


class Untraceable(Exception):
    """Why a Numba function's body is not traced (it then runs as Numba compiles it)."""


# ---------------------------------------------------------------------------
# What is a Numba function (without importing Numba)
# ---------------------------------------------------------------------------

def _from_numba(v: Any) -> bool:
    mod = type(v).__module__ or ""
    return mod == "numba" or mod.startswith("numba.")


def is_numba_ufunc(v: Any) -> bool:
    """A `numba.vectorize` function (a DUFunc, lazy or with signatures)."""
    return _from_numba(v) and type(v).__name__ == "DUFunc" and hasattr(v, "_dispatcher")


def is_numba_function(v: Any) -> bool:
    """An `@numba.njit` / `@numba.jit` function compiled for the CPU (not a CUDA kernel)."""
    return _from_numba(v) and type(v).__name__ == "CPUDispatcher" and hasattr(v, "py_func")


def is_numba_callable(v: Any) -> bool:
    return is_numba_ufunc(v) or is_numba_function(v)


class TracedNumba:
    """Stands for a Numba function in a traced cell: called with tracers, its body is
    traced with Numba's types; otherwise it is the function itself."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn
        self.__name__ = getattr(fn, "__name__", "numba_function")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return repr(self._fn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (mentions_tracer(args) or mentions_tracer(kwargs.values())):
            return self._fn(*args, **kwargs)
        ctx = current()
        try:
            if ctx.uses_cupy:
                raise Untraceable("it is compiled for the CPU and the cell's arrays are on the GPU")
            if kwargs:
                raise Untraceable(f"it is called with keyword arguments ({', '.join(kwargs)})")
            if is_numba_ufunc(self._fn):
                return trace_ufunc_call(ctx, self._fn, args)
            return trace_function_call(ctx, self._fn, args)
        except Untraceable as e:
            return run_now(ctx, self.__name__, self._fn, args, kwargs,
                           f"fuselab does not trace the Numba function `{self.__name__}` ({e}): it runs here "
                           "as Numba compiles it")


def run_now(ctx: TraceContext, name: str, fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any],
            why: str) -> Any:
    """`fn` called with the values plain execution has (NumPy scalars for scalar tracers),
    at a graph break. Arrays it returns become opaque nodes holding those values; numbers
    (Numba returns Python's float, int and bool) are plain Python values, as in plain
    execution."""
    scalar = [isinstance(a, Tracer) and a._scalar for a in args]
    concrete = [a._value(why) if isinstance(a, Tracer) else a for a in args]
    kw = {k: v._value(why) if isinstance(v, Tracer) else v for k, v in kwargs.items()}
    result = fn(*concrete, **kw)
    parts = result if isinstance(result, tuple) else (result,)
    if not parts or not all(isinstance(r, np.ndarray) for r in parts):
        return result
    lifted = lift(ctx, args, kwargs)

    def call(xp: Any, *vals: Any) -> Any:
        real, real_kw = lifted.substitute(vals)
        return fn(*[v[()] if s else v for v, s in zip(real, scalar)], **real_kw)
    avals = tuple(Aval(tuple(r.shape), np.dtype(r.dtype)) for r in parts)
    return _wrap_results(ctx, OpaqueFn(name, call), lifted.nodes, avals if isinstance(result, tuple) else avals[0],
                         False, result)


# ---------------------------------------------------------------------------
# Calls
# ---------------------------------------------------------------------------

def _sample(v: Any) -> Any:
    """What Numba's dispatch sees for an argument: a value of the same Numba type."""
    if isinstance(v, Tracer):
        return v.dtype.type(0) if v._scalar else np.empty((0,) * v.ndim, v.dtype)
    if isinstance(v, np.ndarray):
        return np.empty((0,) * v.ndim, v.dtype)
    if isinstance(v, (bool, int, float, complex, np.generic)):
        return v
    raise Untraceable(f"an argument is a {type(v).__name__}")


def _loop_operand(v: Any) -> Any:
    """How NumPy's loop selection sees an argument: a dtype, or a Python scalar's type
    (NEP 50: Python int, float and complex are weak)."""
    if isinstance(v, (Tracer, np.ndarray, np.generic)):
        return np.dtype(v.dtype)
    if isinstance(v, bool):
        return np.dtype(bool)
    return type(v)


def trace_ufunc_call(ctx: TraceContext, dufunc: Any, args: Sequence[Any]) -> Any:
    """A numba.vectorize ufunc applied to tracers: its body for the loop NumPy picks."""
    import numba
    ufunc = dufunc.ufunc
    if len(args) != ufunc.nin or ufunc.nout != 1:
        raise Untraceable(f"it takes {ufunc.nin} inputs and gives {ufunc.nout} outputs, called with {len(args)}")
    samples = [_sample(a) for a in args]
    with np.errstate(all="ignore"):
        dufunc(*samples)          # compiles the loop for these types, as plain execution does (no element runs)
    try:
        loop = ufunc.resolve_dtypes(tuple(_loop_operand(a) for a in args) + (None,))
    except (TypeError, ValueError) as e:
        raise Untraceable(f"NumPy finds no loop of it for these types ({e})") from None
    in_dts, out_dt = loop[:-1], np.dtype(loop[-1])
    argtys = tuple(numba.from_dtype(np.dtype(d)) for d in in_dts)
    py_func = dufunc._dispatcher.py_func
    operands = [_cast(a, np.dtype(d)) for a, d in zip(args, in_dts)]
    start = len(ctx.builder.nodes)
    out = _Interpreter(ctx, "numpy").run(py_func, argtys, operands, numba.from_dtype(out_dt))
    out = _cast(out, out_dt)
    shape = np.broadcast_shapes(*(np.shape(a) if not isinstance(a, Tracer) else a.shape for a in args))
    out = _fresh(ctx, out, shape, start)
    name = getattr(dufunc, "__name__", "ufunc")
    for node in range(start, len(ctx.builder.nodes)):
        ctx.labels[node] = name     # NumPy words a ufunc's floating-point warnings "... in <name>"
    return out


def trace_function_call(ctx: TraceContext, dispatcher: Any, args: Sequence[Any]) -> Any:
    """An @njit function applied to tracers: its body typed for the arguments' types."""
    import numba
    argtys = tuple(numba.typeof(_sample(a)) for a in args)
    error_model = dispatcher.targetoptions.get("error_model", "python")
    if not any(isinstance(a, Tracer) and not a._scalar for a in args):
        raise Untraceable("it returns a Python number here (Numba's boxing of a scalar result)")
    start = len(ctx.builder.nodes)
    with np.errstate(all="ignore"):    # Numba's compiled code gives no floating-point warnings
        out = _Interpreter(ctx, error_model).run(dispatcher.py_func, argtys, list(args), None)
    if not isinstance(out, Tracer) or out.ndim == 0:
        raise Untraceable("it returns a Python number here (Numba's boxing of a scalar result)")
    if out._node < start and not any(out is a for a in args):
        out = out.copy()
    return out


def _fresh(ctx: TraceContext, out: Any, shape: tuple[int, ...], start: int) -> Any:
    """A ufunc's result: a new array of the broadcast shape (never one of its inputs or a
    view), a NumPy scalar where NumPy gives one."""
    if not isinstance(out, Tracer):
        out = np.asarray(out)
        full = np.broadcast_to(out, shape).copy()
        return full[()] if not shape else full
    if out.shape != shape:
        out = np.broadcast_to(out, shape)
    if out._node < start or ctx.builder.nodes[out._node].op in ("transpose", "slice", "reshape", "broadcast_to"):
        out = out.copy()
    return out


def _cast(v: Any, dt: np.dtype) -> Any:
    """`v` as a value of dtype `dt`, converted as Numba converts it (C casts: wrapping
    for integers, rounding for floats)."""
    if isinstance(v, Tracer):
        return v if v.dtype == dt else v.astype(dt)
    if isinstance(v, np.ndarray):
        raise Untraceable("it reads an array captured as a constant")
    with np.errstate(all="ignore"):
        return np.asarray(v).astype(dt)[()]


def _dtype_of(v: Any) -> np.dtype:
    return np.dtype(v.dtype) if hasattr(v, "dtype") else np.asarray(v).dtype


# ---------------------------------------------------------------------------
# Numba's IR, interpreted with NumPy operations on tracers
# ---------------------------------------------------------------------------

_BINARY = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
           operator.truediv: np.true_divide, operator.floordiv: np.floor_divide, operator.mod: np.remainder,
           operator.pow: np.power, operator.lt: np.less, operator.le: np.less_equal, operator.gt: np.greater,
           operator.ge: np.greater_equal, operator.eq: np.equal, operator.ne: np.not_equal,
           operator.and_: np.bitwise_and, operator.or_: np.bitwise_or, operator.xor: np.bitwise_xor,
           operator.lshift: np.left_shift, operator.rshift: np.right_shift}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
            operator.imod: operator.mod, operator.ipow: operator.pow, operator.iand: operator.and_,
            operator.ior: operator.or_, operator.ixor: operator.xor, operator.ilshift: operator.lshift,
            operator.irshift: operator.rshift}
_UNARY = {operator.neg: np.negative, operator.pos: np.positive, operator.invert: np.invert,
          operator.not_: np.logical_not}
_MATH = {"exp": np.exp, "expm1": np.expm1, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
         "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
         "atan": np.arctan, "atan2": np.arctan2, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
         "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "hypot": np.hypot,
         "copysign": np.copysign, "fabs": np.absolute, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
         "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "pow": np.power,
         "degrees": np.rad2deg, "radians": np.deg2rad}
_MATH_FUNCS = {getattr(math, k): v for k, v in _MATH.items() if hasattr(math, k)}
_MATH_FUNCS[math.log] = np.log        # (one argument; math.log(x, base) is refused by arity)
_DIVISIONS = (np.true_divide, np.floor_divide, np.remainder)
_ROUNDINGS = (np.floor, np.ceil, np.trunc)   # math.floor & co give integers in Numba, as in Python


MAX_PATHS = 32   # paths through a body's branches (each is traced; the results merge by np.where)


class _Interpreter:
    """Runs one Numba function's IR on tracers. Straight-line code runs as it is; at a
    branch on a traced value both sides run (their operations give no warnings: NumPy
    computes them for every element, Numba only where taken) and the values they return
    merge with np.where. Loops are refused."""

    def __init__(self, ctx: TraceContext, error_model: str, depth: int = 0) -> None:
        self.ctx = ctx
        self.error_model = error_model
        self.depth = depth
        self.paths = 1

    def run(self, py_func: Callable[..., Any], argtys: tuple, args: Sequence[Any], return_type: Any) -> Any:
        from numba.core import errors, ir
        if self.depth > 8:
            raise Untraceable("its calls nest too deep")
        try:
            func_ir, typing = _typed_ir(py_func, argtys, return_type)
        except errors.NumbaError as e:
            raise Untraceable(f"Numba cannot type it for {', '.join(map(str, argtys))}: "
                              f"{str(e).strip().splitlines()[0]}") from None
        from numba.core.analysis import compute_cfg_from_blocks
        if compute_cfg_from_blocks(func_ir.blocks).loops():
            raise Untraceable("its body loops (for, while)")
        self.typemap, self.calltypes = typing.typemap, typing.calltypes
        self.blocks, self.args = func_ir.blocks, args
        return self.block(min(func_ir.blocks), {}, ())

    def block(self, label: int, env: dict[str, Any], path: tuple[int, ...]) -> Any:
        """The value the function returns from block `label` on (env: the variables)."""
        from numba.core import ir, types
        if label in path:
            raise Untraceable("its body loops (for, while)")
        path = path + (label,)
        for stmt in self.blocks[label].body:
            if isinstance(stmt, ir.Assign):
                v = self.value(stmt.value, stmt.target.name, env, self.args)
                ty = self.typemap.get(stmt.target.name)
                if isinstance(ty, (types.Number, types.Boolean, types.Array)) and not isinstance(stmt.value, ir.Arg):
                    v = self.cast_to(v, ty)       # a variable has one type: Numba converts what it is given
                env[stmt.target.name] = v
            elif isinstance(stmt, ir.Return):
                return env[stmt.value.name]
            elif isinstance(stmt, ir.Jump):
                return self.block(stmt.target, env, path)
            elif isinstance(stmt, ir.Branch):
                cond = env[stmt.cond.name]
                if not isinstance(cond, Tracer):
                    return self.block(stmt.truebr if bool(cond) else stmt.falsebr, env, path)
                self.paths += 1
                if self.paths > MAX_PATHS:
                    raise Untraceable(f"its body has more than {MAX_PATHS} paths through its branches")
                with np.errstate(all="ignore"):
                    yes = self.block(stmt.truebr, dict(env), path)
                    no = self.block(stmt.falsebr, dict(env), path)
                return np.where(cond, yes, no)
            elif isinstance(stmt, (ir.Raise, ir.StaticRaise)):
                raise Untraceable("it can raise an exception")
            elif not isinstance(stmt, ir.Del):
                raise Untraceable(f"its body has a statement fuselab does not trace ({type(stmt).__name__})")
        raise Untraceable("its body does not return")

    # -- expressions ---------------------------------------------------------
    def value(self, v: Any, target: str, env: dict[str, Any], args: Sequence[Any]) -> Any:
        from numba.core import ir
        if isinstance(v, ir.Arg):
            return args[v.index]
        if isinstance(v, (ir.Const, ir.Global, ir.FreeVar)):
            return v.value
        if isinstance(v, ir.Var):
            return env[v.name]
        if not isinstance(v, ir.Expr):
            raise Untraceable(f"its body has a {type(v).__name__} fuselab does not trace")
        get = lambda var: env[var.name]   # noqa: E731
        if v.op == "getattr":
            obj = get(v.value)
            if isinstance(obj, ModuleType):
                return getattr(obj, v.attr)
            raise Untraceable(f"it reads the attribute `.{v.attr}`")
        if v.op == "cast":
            return self.cast_to(get(v.value), self.typemap[target])
        if v.op in ("binop", "inplace_binop"):
            fn = _INPLACE.get(v.fn, v.fn) if v.op == "inplace_binop" else v.fn
            if fn not in _BINARY:
                raise Untraceable(f"it uses the operator {getattr(fn, '__name__', fn)}")
            return self.apply(_BINARY[fn], [get(v.lhs), get(v.rhs)], self.calltypes[v])
        if v.op == "unary":
            if v.fn not in _UNARY:
                raise Untraceable(f"it uses the operator {getattr(v.fn, '__name__', v.fn)}")
            return self.apply(_UNARY[v.fn], [get(v.value)], self.calltypes[v])
        if v.op == "call":
            if v.kws or v.vararg or getattr(v, "varkwarg", None):
                raise Untraceable("it calls a function with keyword or * arguments")
            return self.call(get(v.func), [get(a) for a in v.args], self.calltypes[v])
        raise Untraceable(f"its body has an expression fuselab does not trace ({v.op})")

    def call(self, fn: Any, args: list[Any], sig: Any) -> Any:
        if isinstance(fn, np.ufunc):
            return self.apply(fn, args, sig)
        if fn in _MATH_FUNCS:
            return self.apply(_MATH_FUNCS[fn], args, sig)
        if fn is abs:
            return self.apply(np.absolute, args, sig)
        if fn in (max, min) and len(args) > 1:
            # Python's algorithm, as Numba's: the first of equals, NaN only where it comes first
            dt = _as_dtype(sig.return_type)
            acc = _cast(args[0], dt)
            for v in args[1:]:
                v = _cast(v, dt)
                acc = np.where(np.greater(v, acc) if fn is max else np.less(v, acc), v, acc)
            return acc
        if fn in (float, int, bool) or (isinstance(fn, type) and issubclass(fn, np.generic)):
            if len(args) != 1:
                raise Untraceable(f"it calls {fn.__name__} with {len(args)} arguments")
            return self.cast_to(args[0], sig.return_type)
        if is_numba_function(fn):
            from numba.core import types
            inner = _Interpreter(self.ctx, fn.targetoptions.get("error_model", "python"), self.depth + 1)
            operands = [a if isinstance(t, types.Array) else self.cast_to(a, t) for a, t in zip(args, sig.args)]
            return self.cast_to(inner.run(fn.py_func, tuple(sig.args), operands, sig.return_type), sig.return_type)
        raise Untraceable(f"it calls {getattr(fn, '__name__', type(fn).__name__)}, which fuselab does not "
                          "trace inside a Numba function")

    def cast_to(self, v: Any, ty: Any) -> Any:
        from numba.core import types
        if isinstance(ty, types.Array):
            if not isinstance(v, Tracer) or v.ndim != ty.ndim:
                raise Untraceable("it makes an array fuselab cannot follow")
            return _cast(v, _as_dtype(ty.dtype))
        return _cast(v, _as_dtype(ty))

    def apply(self, ufunc: np.ufunc, args: list[Any], sig: Any) -> Any:
        """`ufunc` as Numba types it: scalars converted to the signature's argument types;
        arrays and scalars mixed by Numba's ufunc rules (its own loop selection)."""
        from numba.core import types
        from numba.np.numpy_support import ufunc_find_matching_loop
        arrays = any(isinstance(t, types.Array) for t in sig.args)
        if len(args) != ufunc.nin:
            raise Untraceable(f"it calls {ufunc.__name__} with {len(args)} arguments")
        if arrays:
            loop = ufunc_find_matching_loop(ufunc, [t.dtype if isinstance(t, types.Array) else t for t in sig.args])
            if loop is None:
                raise Untraceable(f"Numba finds no loop of {ufunc.__name__} for {sig.args}")
            in_dts = [_as_dtype(t) for t in loop.inputs]
            want = _as_dtype(sig.return_type.dtype)
        else:
            in_dts = [_as_dtype(t) for t in sig.args]
            want = _as_dtype(sig.return_type)
            if ufunc in _DIVISIONS and self.error_model == "python":
                raise Untraceable("Numba raises ZeroDivisionError for a scalar division by zero "
                                  "(error_model='python'), where NumPy gives inf or nan")
        ops = [_cast(a, d) for a, d in zip(args, in_dts)]
        out = ufunc(*ops)
        got = _dtype_of(out)
        if got != want:
            if ufunc is np.power and want.kind == "f":      # float ** int: Numba powers in the float type
                out = ufunc(*[_cast(a, want) for a in ops])
            elif ufunc in _ROUNDINGS:
                out = _cast(out, want)
            else:
                raise Untraceable(f"Numba types {ufunc.__name__}({', '.join(d.name for d in in_dts)}) as "
                                  f"{want.name} where NumPy's loop gives {got.name}")
        return out


def _as_dtype(ty: Any) -> np.dtype:
    from numba.core import errors
    from numba.np.numpy_support import as_dtype
    try:
        return np.dtype(as_dtype(getattr(ty, "literal_type", ty) if _is_literal(ty) else ty))
    except (errors.NumbaNotImplementedError, NotImplementedError, TypeError):
        raise Untraceable(f"it uses values of Numba type {ty}") from None


def _is_literal(ty: Any) -> bool:
    from numba.core import types
    return isinstance(ty, types.Literal)


_TYPED: dict[tuple, tuple] = {}


def _typed_ir(py_func: Callable[..., Any], argtys: tuple, return_type: Any) -> tuple:
    """Numba's IR of `py_func` and its type inference for `argtys` (remembered)."""
    key = (py_func, argtys, return_type)
    if key not in _TYPED:
        from numba.core import compiler, typed_passes
        from numba.core.registry import cpu_target
        func_ir = compiler.run_frontend(py_func)
        tc, tg = cpu_target.typing_context, cpu_target.target_context
        tc.refresh()
        typing = typed_passes.type_inference_stage(tc, tg, func_ir, argtys, return_type)
        if len(_TYPED) > 256:
            _TYPED.clear()
        _TYPED[key] = (func_ir, typing)
    return _TYPED[key]
