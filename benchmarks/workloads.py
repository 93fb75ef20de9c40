"""The GPU benchmark's workloads: each a graph (built directly, as a traced cell would
give it), its inputs, the same computation for cupy.fuse and for torch, and its size.

float32 unless said; the sizes are the ones BENCHMARKS.md reports.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from fuselab.ir import Graph, GraphBuilder
from tests.support.cells import layernorm, rmsnorm, softmax


@dataclass
class Workload:
    name: str
    graph: Graph
    make_inputs: Callable[[Any], dict[str, Any]]     # xp -> inputs (on the device)
    fuse_fn: Callable[..., Any] | None               # f(*arrays) for cupy.fuse, or None
    torch_fn: Callable[..., Any] | None              # f(*tensors) for torch.compile
    kind: str                                        # pointwise, row, reduction, launch-bound
    options: dict[str, Any] = field(default_factory=dict)   # CodegenOptions fields (fp16_math, row_tier)

    def variant(self, label: str, **options: Any) -> "Workload":
        return replace(self, name=f"{self.name} ({label})", options={**self.options, **options})


def _chain(b: GraphBuilder, x: int, ops: list[tuple[str, float | None]]) -> int:
    y = x
    dt = b.aval(x).dtype
    for op, c in ops:
        y = b.elemwise(op, [y] if c is None else [y, b.const(c, dt)])
    return y


CHAIN8 = [("multiply", 1.5), ("add", 0.25), ("square", None), ("subtract", 0.5), ("absolute", None),
          ("sqrt", None), ("multiply", 0.75), ("add", 1.0)]


def _chain_fn(ops, module: str):
    """The chain written with `module` (cupy or torch), for cupy.fuse / torch.compile."""
    def fn(x):
        mod = __import__(module)
        for op, c in ops:
            if op == "multiply":
                x = x * c
            elif op == "add":
                x = x + c
            elif op == "subtract":
                x = x - c
            elif op == "square":
                x = x * x
            else:   # absolute, sqrt, sin: same name in both modules
                x = getattr(mod, {"absolute": "abs"}.get(op, op))(x)
        return x
    return fn


def chain(n: int, dtype=np.float32, name="8-op chain") -> Workload:
    b = GraphBuilder()
    x = b.input("x", (n,), dtype)
    g = b.build([("y", _chain(b, x, CHAIN8))])
    return Workload(name, g, lambda xp: {"x": xp.random.standard_normal(n, dtype=np.float32).astype(dtype)},
                    _chain_fn(CHAIN8, "cupy"), _chain_fn(CHAIN8, "torch"), "pointwise")


def gelu(n: int) -> Workload:
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    f = np.float32
    x3 = b.elemwise("multiply", [b.elemwise("multiply", [x, x]), x])
    inner = b.elemwise("multiply", [b.elemwise("add", [x, b.elemwise("multiply", [x3, b.const(0.044715, f)])]),
                                    b.const(0.7978845608, f)])
    y = b.elemwise("multiply", [b.elemwise("multiply", [x, b.const(0.5, f)]),
                                b.elemwise("add", [b.elemwise("tanh", [inner]), b.const(1.0, f)])])
    g = b.build([("y", y)])

    def fuse_fn(x):
        import cupy as cp
        return x * 0.5 * (cp.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1.0)

    def torch_fn(x):
        import torch
        return x * 0.5 * (torch.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1.0)
    return Workload("GELU (tanh)", g, lambda xp: {"x": xp.random.standard_normal(n, dtype=np.float32)},
                    fuse_fn, torch_fn, "pointwise")


def bias_relu(rows: int, cols: int) -> Workload:
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    bias = b.input("b", (cols,), np.float32)
    y = b.elemwise("maximum", [b.elemwise("add", [x, bias]), b.const(0.0, np.float32)])
    g = b.build([("y", y)])

    def fuse_fn(x, bias):
        import cupy as cp
        return cp.maximum(x + bias, 0)

    def torch_fn(x, bias):
        import torch
        return torch.relu(x + bias)
    return Workload("bias + ReLU", g, lambda xp: {"x": xp.random.standard_normal((rows, cols), dtype=np.float32),
                                                  "b": xp.random.standard_normal(cols, dtype=np.float32)},
                    fuse_fn, torch_fn, "pointwise")


def _row_inputs(graph: Graph):
    def make(xp):
        return {n: xp.random.standard_normal(graph.nodes[i].shape, dtype=np.float32)
                for n, i in zip(graph.input_names(), graph.input_ids)}
    return make


def softmax_w(rows: int, cols: int) -> Workload:

    def torch_fn(x):
        import torch
        m = x.amax(-1, keepdim=True)
        e = torch.exp(x - m)
        return e / e.sum(-1, keepdim=True)
    g = softmax(rows, cols)
    return Workload(f"softmax {rows}x{cols}", g, _row_inputs(g), None, torch_fn, "row")


def layernorm_w(rows: int, cols: int) -> Workload:

    def torch_fn(x, gamma, beta):
        import torch
        mu = x.mean(-1, keepdim=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdim=True)
        return xc / torch.sqrt(var + 1e-5) * gamma + beta
    g = layernorm(rows, cols)
    return Workload(f"layernorm {rows}x{cols}", g, _row_inputs(g), None, torch_fn, "row")


def rmsnorm_w(rows: int, cols: int) -> Workload:

    def torch_fn(x, w):
        import torch
        return x * (1.0 / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6)) * w
    g = rmsnorm(rows, cols)
    return Workload(f"rmsnorm {rows}x{cols}", g, _row_inputs(g), None, torch_fn, "row")


def sum_squares(n: int) -> Workload:
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    g = b.build([("s", b.reduce("sum", b.elemwise("multiply", [x, x])))])

    def fuse_fn(x):
        import cupy as cp
        return cp.sum(x * x)

    def torch_fn(x):
        return (x * x).sum()
    return Workload("sum of squares", g, lambda xp: {"x": xp.random.standard_normal(n, dtype=np.float32)},
                    fuse_fn, torch_fn, "reduction")


def column_mean(rows: int, cols: int) -> Workload:
    b = GraphBuilder()
    x = b.input("x", (rows, cols), np.float32)
    m = b.elemwise("multiply", [b.reduce("sum", x, axis=0), b.const(1.0 / rows, np.float32)])
    g = b.build([("m", m)])

    def torch_fn(x):
        return x.mean(0)
    return Workload(f"column mean {rows}x{cols}", g,
                    lambda xp: {"x": xp.random.standard_normal((rows, cols), dtype=np.float32)},
                    None, torch_fn, "reduction")


def launch_bound(n: int = 4096, ops: int = 20) -> Workload:
    seq = [("multiply", 1.01), ("add", 0.01), ("sin", None), ("multiply", 0.9)] * (ops // 4)
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    g = b.build([("y", _chain(b, x, seq))])

    return Workload(f"{ops}-op chain, {n} elements", g,
                    lambda xp: {"x": xp.random.standard_normal(n, dtype=np.float32)},
                    _chain_fn(seq, "cupy"), _chain_fn(seq, "torch"), "launch-bound")


def all_workloads(scale: int = 0) -> list[Workload]:
    """scale 0: the reported sizes; a negative scale shrinks every size by 2**-scale."""
    s = 2 ** min(0, scale)

    def n(v: int) -> int:
        return max(1, int(v * s))
    long_rows = [softmax_w(n(1 << 14), 16384), layernorm_w(n(1 << 14), 16384), rmsnorm_w(n(1 << 14), 16384)]
    half = chain(n(1 << 28), np.float16, "8-op chain float16")
    return [chain(n(1 << 28)), gelu(n(1 << 28)), bias_relu(n(1 << 18), 1024),
            softmax_w(n(1 << 18), 1024), long_rows[0],
            layernorm_w(n(1 << 18), 1024), long_rows[1],
            rmsnorm_w(n(1 << 18), 1024), long_rows[2],
            sum_squares(n(1 << 28)), column_mean(n(1 << 18), 1024),
            half, half.variant("fp16_math=fast", fp16_math="fast"), launch_bound(),
            *[w.variant("row in shared memory", row_tier="smem") for w in long_rows]]
