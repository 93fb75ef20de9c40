"""NumPy-like formulas over a GraphBuilder (no tracer needed): `Expr` wraps a node id so
that a cell reads like the NumPy it stands for; `graph_of(build)` makes the graph.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from fuselab.ir import Graph, GraphBuilder

F32 = np.float32


class Expr:
    """A node of a GraphBuilder with NumPy-like operators (scalars become constants of the
    other operand's dtype, as NEP 50 weak scalars do)."""

    def __init__(self, b: GraphBuilder, i: int) -> None:
        self.b, self.i = b, i

    @property
    def shape(self) -> tuple[int, ...]:
        return self.b.aval(self.i).shape

    def _n(self, other: Any) -> int:
        if isinstance(other, Expr):
            return other.i
        return self.b.const(other, self.b.aval(self.i).dtype)

    def _bin(self, op: str, other: Any, swap: bool = False) -> "Expr":
        a, c = self.i, self._n(other)
        return Expr(self.b, self.b.elemwise(op, [c, a] if swap else [a, c]))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("subtract", o)
    def __rsub__(self, o): return self._bin("subtract", o, True)
    def __mul__(self, o): return self._bin("multiply", o)
    def __rmul__(self, o): return self._bin("multiply", o, True)
    def __truediv__(self, o): return self._bin("true_divide", o)
    def __rtruediv__(self, o): return self._bin("true_divide", o, True)
    def __gt__(self, o): return self._bin("greater", o)
    def __neg__(self): return self.f("negative")

    def f(self, op: str) -> "Expr":
        return Expr(self.b, self.b.elemwise(op, [self.i]))

    def reduce(self, op: str, axis: Any = None, keepdims: bool = False) -> "Expr":
        return Expr(self.b, self.b.reduce(op, self.i, axis, keepdims))

    def sum(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        return self.reduce("sum", axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        return self.reduce("max", axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> "Expr":
        n = math.prod(self.shape) // max(1, math.prod(self.sum(axis, keepdims).shape))
        return self.sum(axis, keepdims) / float(n)

    def __getitem__(self, key) -> "Expr":
        key = key if isinstance(key, tuple) else (key,)
        key = key + (slice(None),) * (len(self.shape) - len(key))
        starts, steps, lens = [], [], []
        for k, d in zip(key, self.shape):
            s, e, st = k.indices(d)
            starts.append(s)
            steps.append(st)
            lens.append(len(range(s, e, st)))
        return Expr(self.b, self.b.slice(self.i, starts, steps, lens))

    @property
    def T(self) -> "Expr":
        return Expr(self.b, self.b.transpose(self.i, tuple(reversed(range(len(self.shape))))))

    def reshape(self, *shape: int) -> "Expr":
        return Expr(self.b, self.b.reshape(self.i, shape))


def where(c: Expr, x: Expr, y: Any) -> Expr:
    return Expr(c.b, c.b.where(c.i, x.i, x._n(y)))


def graph_of(build: Callable[[Callable[..., Expr]], dict[str, Expr]]) -> Graph:
    """The graph of `build(inp)`: `inp(name, shape)` makes an input, the dict it returns
    names the results."""
    b = GraphBuilder()

    def inp(name: str, shape: Sequence[int], dtype=F32) -> Expr:
        return Expr(b, b.input(name, shape, dtype))

    outs = build(inp)
    return b.build([(k, v.i) for k, v in outs.items()])


def layernorm_rows(x: Expr, g: Expr, b: Expr) -> Expr:
    """Layer normalisation of the rows of x, then `* g + b`."""
    d = x - x.mean(-1, keepdims=True)
    return d / (d.f("square").mean(-1, keepdims=True) + 1e-5).f("sqrt") * g + b


def tanh_gelu(u: Expr) -> Expr:
    """GELU, tanh approximation."""
    return 0.5 * u * (1.0 + (0.7978845608 * (u + 0.044715 * u * u * u)).f("tanh"))
