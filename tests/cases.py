"""Test cases shared by the emulated (CPU) and the GPU differential tests: each is a
graph, the plans to run, the inputs, and the tolerance to compare with NumPy."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuselab.ir import Graph, GraphBuilder
from fuselab.plan import unfused_plan
from fuselab.plan.model import Plan, Template

from graphs import (ALL_DTYPES, FLOAT_DTYPES, all_casts, all_elementwise, layernorm, one_kernel, rmsnorm,
                    sample, small_nonneg, softmax)


@dataclass
class Case:
    id: str
    graph: Graph
    inputs: dict[str, np.ndarray]
    plans: list[Plan] = field(default_factory=list)
    rtol: float | None = None     # None: the dtype's default (fuselab.runtime.verify.RTOL)
    # run the heuristics' configurations only: a case whose result hangs on the order of
    # a few additions (z-scores of elements a few ulps apart) would otherwise hang on which
    # candidate the tuner timed fastest, each within the documented reduction-order tolerance
    untuned: bool = False


def _name(dt) -> str:
    return np.dtype(dt).name


def elementwise_cases(shape=(37, 5), bshape=(5,), seed=0) -> list[Case]:
    out = []
    for dt in ALL_DTYPES:
        rng = np.random.default_rng(seed)
        g = all_elementwise(dt, shape, bshape)
        inputs = {"a": sample(dt, shape, rng), "b": sample(dt, bshape, rng), "k": small_nonneg(dt, bshape, rng)}
        out.append(Case(f"elementwise-{_name(dt)}-{shape}", g, inputs,
                        [one_kernel(g, Template.POINTWISE), unfused_plan(g)]))
    return out


def cast_cases(shape=(9, 7), seed=1) -> list[Case]:
    out = []
    for dt in ALL_DTYPES:
        rng = np.random.default_rng(seed)
        g = all_casts(dt, shape)
        out.append(Case(f"casts-{_name(dt)}", g, {"a": sample(dt, shape, rng)}, [one_kernel(g, Template.POINTWISE)]))
    return out


def _reductions(dt, shape, axis, ops) -> Graph:
    b = GraphBuilder()
    x = b.input("x", shape, dt)
    return b.build([(op, b.reduce(op, x, axis=axis)) for op in ops])


REDUCTION_LAYOUTS = [((1000,), None), ((20000,), None), ((33, 65), 0), ((33, 65), 1), ((3000, 64), 0),
                     ((8, 3000), 1), ((4, 5, 6), 1), ((5, 7, 300), (0, 2)), ((3, 1, 7), 1), ((2, 3, 4, 5), (1, 2)),
                     ((6, 4000, 40), 1)]


def reduction_cases(layouts=REDUCTION_LAYOUTS, seed=2) -> list[Case]:
    out = []
    for dt in ALL_DTYPES:
        for shape, axis in layouts:
            rng = np.random.default_rng(seed)
            ops = ["sum", "max", "min", "any", "all"] + (["argmax", "argmin"] if not isinstance(axis, tuple) else [])
            g = _reductions(dt, shape, axis, ops)
            x = sample(dt, shape, rng)
            if np.dtype(dt).kind == "f" and x.size > 100:
                x.reshape(-1)[x.size // 3] = np.nan if x.size % 2 else x.reshape(-1)[x.size // 3]
            rtol = 5e-2 if np.dtype(dt) == np.float16 else None   # NumPy sums float16 in float16 by rows
            out.append(Case(f"reductions-{_name(dt)}-{shape}-{axis}", g, {"x": x},
                            [one_kernel(g, Template.REDUCTION)], rtol))
    return out


# (input shape, transpose, reduced axes of the transposed view): the reduction reads the
# input in memory order, its layout taken from there (column strategy for x.T.sum(1))
TRANSPOSED_REDUCTIONS = [((33, 650), (1, 0), 1), ((3000, 64), (1, 0), 1), ((64, 3000), (1, 0), 0),
                         ((40, 50, 70), (1, 0, 2), 0), ((6, 300, 40), (2, 0, 1), (0,)), ((6, 300, 40), (1, 2, 0), 2),
                         ((5, 6, 7, 8), (0, 2, 1, 3), (1, 3))]


def _transposed_view(dt, shape, perm) -> tuple[GraphBuilder, int]:
    """A graph builder with input x of `shape` and the view x.transpose(perm)."""
    b = GraphBuilder()
    return b, b.transpose(b.input("x", shape, dt), perm)


def transposed_reduction_cases(seed=12) -> list[Case]:
    """Reductions over transposed views: every op and dtype, arg reductions along one
    axis, a keepdims result broadcast back over the view (prologue and epilogue)."""
    out = []
    for dt in ALL_DTYPES:
        for shape, perm, axis in TRANSPOSED_REDUCTIONS:
            rng = np.random.default_rng(seed)
            b, t = _transposed_view(dt, shape, perm)
            single = not isinstance(axis, tuple) or len(axis) == 1
            ops = ["sum", "max", "min", "any"] + (["argmax", "argmin"] if single else [])
            outs = [(op, b.reduce(op, t, axis=axis)) for op in ops]
            if np.dtype(dt).kind == "f":
                m = b.reduce("max", t, axis=axis, keepdims=True)
                outs.append(("centred", b.elemwise("subtract", [t, m])))
            g = b.build(outs)
            xs = sample(dt, shape, rng)
            rtol = 5e-2 if np.dtype(dt) == np.float16 else None
            plans = [unfused_plan(g)] + ([one_kernel(g, Template.REDUCTION)] if np.dtype(dt).kind != "f" else [])
            out.append(Case(f"transposed-reduction-{_name(dt)}-{shape}-{perm}-{axis}", g, {"x": xs}, plans, rtol))
    return out


# (input shape, transpose, a slice of the view or None): the transpose path's tiles,
# whole and cut at the edges (sizes no multiple of 32), of 2-, 3- and 4-D arrays; narrow
# tiles (8 x 128, 16 x 64) where the input's contiguous axis is short, and (64 x 16,
# 256 x 4) where the output's last axis is
TRANSPOSED_POINTWISE = [((70, 45), (1, 0), None), ((33, 100), (1, 0), ((1, 0), (1, 1), (99, 33))),
                        ((5, 40, 37), (0, 2, 1), None), ((40, 9, 37), (2, 1, 0), None),
                        ((3, 36, 4, 33), (0, 3, 2, 1), None), ((300, 8), (1, 0), None),
                        ((150, 13), (1, 0), None), ((4, 140, 11), (0, 2, 1), None),
                        ((14, 300), (1, 0), None), ((3, 530), (1, 0), None), ((5, 9, 70), (0, 2, 1), None),
                        ((14, 100), (1, 0), ((3, 1), (1, 1), (94, 13)))]


def transposed_pointwise_cases(seed=13) -> list[Case]:
    """Elementwise cells over transposed views next to contiguous operands (the transpose
    path), every dtype: two outputs, one of them a cast, and a broadcast operand."""
    out = []
    for dt in ALL_DTYPES:
        for shape, perm, cut in TRANSPOSED_POINTWISE:
            rng = np.random.default_rng(seed)
            b, t = _transposed_view(dt, shape, perm)
            if cut is not None:
                t = b.slice(t, *cut)
            tshape = tuple(b.aval(t).shape)
            z = b.input("z", tshape, dt)
            w = b.input("w", tshape[-1:], dt)
            op = "logical_xor" if np.dtype(dt) == np.bool_ else "add"
            y = b.elemwise(op, [b.elemwise(op, [t, z]), w])
            g = b.build([("y", y), ("c", b.astype(t, np.float64 if np.dtype(dt) == np.float32 else np.float32))])
            inputs = {"x": sample(dt, shape, rng), "z": sample(dt, tshape, rng), "w": sample(dt, tshape[-1:], rng)}
            out.append(Case(f"transposed-pointwise-{_name(dt)}-{shape}-{perm}{'-sliced' if cut else ''}", g, inputs,
                            [one_kernel(g, Template.POINTWISE)], 1e-2 if np.dtype(dt) == np.float16 else None))
    return out


def prod_cases(seed=3) -> list[Case]:
    out = []
    for dt in (np.float32, np.float64, np.int32, np.int64, np.uint8):
        for shape, axis in [((5000,), None), ((300, 40), 0), ((40, 300), 1)]:
            rng = np.random.default_rng(seed)
            x = rng.uniform(0.98, 1.02, shape).astype(dt) if np.dtype(dt).kind == "f" else \
                rng.integers(0, 4, shape).astype(dt)
            g = _reductions(dt, shape, axis, ["prod"])
            out.append(Case(f"prod-{_name(dt)}-{shape}-{axis}", g, {"x": x}, [one_kernel(g, Template.REDUCTION)],
                            1e-4 if np.dtype(dt) == np.float32 else None))
    return out


def fused_reduction_cases(seed=4) -> list[Case]:
    """Prologue and epilogue fused around sibling reductions: mean, norm, stored prologue."""
    out = []
    for shape, axis in [((1 << 16,), None), ((4096, 96), 0), ((96, 4096), 1), ((17, 33, 65), 1)]:
        b = GraphBuilder()
        x = b.input("x", shape, np.float32)
        w = b.input("w", shape, np.float32)
        xw = b.elemwise("multiply", [x, w])
        xx = b.elemwise("multiply", [x, x])
        s1 = b.reduce("sum", xw, axis=axis)
        s2 = b.reduce("sum", xx, axis=axis)
        n = int(np.prod(shape)) if axis is None else shape[axis]
        mean = b.elemwise("multiply", [s1, b.const(1.0 / n, np.float32)])
        norm = b.elemwise("sqrt", [s2])
        g = b.build([("xw", xw), ("mean", mean), ("norm", norm)])
        rng = np.random.default_rng(seed)
        inputs = {"x": rng.standard_normal(shape).astype(np.float32),
                  "w": rng.standard_normal(shape).astype(np.float32)}
        out.append(Case(f"fused-reduction-{shape}-{axis}", g, inputs,
                        [one_kernel(g, Template.REDUCTION), unfused_plan(g)], 1e-4))
    return out


def row_cases(cols_list=(1, 7, 33, 1000, 1030, 5000, 50000), rows=5, seed=5) -> list[Case]:
    out = []
    for dt in FLOAT_DTYPES:
        for cols in cols_list:
            if cols == 50000 and dt != np.float32:
                continue
            for make in (softmax, layernorm, rmsnorm):
                rng = np.random.default_rng(seed)
                g = make(rows, cols, dt)
                inputs = {}
                for i in g.input_ids:
                    n = g.nodes[i]
                    inputs[n.args["name"]] = rng.uniform(-2, 2, n.shape).astype(dt)
                rtol = 1e-2 if np.dtype(dt) == np.float16 else (1e-4 if np.dtype(dt) == np.float32 else 1e-10)
                out.append(Case(f"row-{make.__name__}-{_name(dt)}-{rows}x{cols}", g, inputs,
                                [one_kernel(g, Template.ROW)], rtol))
    return out


# rows along a strided axis: (cell, shape, names of extra (R, 1) inputs)
STRIDED_ROWS = [   # (cell, shape): rows along a strided axis need MIN_STRIDED_ROWS rows
    ("y = x - x.mean(0)", (2, 32768)),
    ("y = x - x.mean(axis=0, keepdims=True)", (5, 33001)),
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (2, 20, 16400)),
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (1, 40, 32771)),
    ("m = x.max(0)\ne = np.exp(x - m)\ny = e / e.sum(0)", (70, 32770)),     # over 64: the thread tier
    ("mu = x.mean(0)\nv = ((x - mu) ** 2).mean(0)\ny = (x - mu) / np.sqrt(v + 1e-3)", (7, 3, 11000)),
    ("i = x.argmax(0)\ns = x.sum(0)\ny = x / s", (6, 33000)),
    ("y = x - x.mean(1, keepdims=True)\nz = x.std(1)", (4, 9, 8200)),
    ("y = (x - x.mean(0)) * g[:, None] + 1", (9, 33000)),          # g: one value per column
    ("y = x - x.mean(1, keepdims=True)", (5, 7, 1)),               # trailing unit axis: contiguous
    # slabs: few adjacent rows (17, 3) of long strided rows, a block each (float16 sums of
    # at most ~300 elements: NumPy's own add in half at every step, not 1% off)
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (3, 301, 17)),
    ("s = x.std(1)\ni = x.argmin(1)\ny = x - x.mean(1, keepdims=True)", (4, 3001, 3)),
    ("y = x - np.log(np.exp(x).sum(1, keepdims=True))", (2, 900, 45)),   # 45: a chunk of 32 and a partial one
]


STAGED_ROWS = [   # rows along axis 1 whose columns lie 2-4 elements apart: the staged tier
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (300, 14, 2), np.float32),
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (257, 14, 2), np.float16),
    ("y = x - x.mean(1, keepdims=True)\nz = x.std(1)\ni = x.argmax(1)", (101, 9, 3), np.float32),
    ("y = (x - x.mean(1, keepdims=True)) * g[:, None] + 1", (200, 12, 4), np.float64),
]


CONTIGUOUS_STAGED = [   # contiguous rows off 16-byte vectors through the staged tier
    ("mu = x.mean(-1, keepdims=True)\nv = ((x - mu) ** 2).mean(-1, keepdims=True)\n"
     "y = (x - mu) / np.sqrt(v + 1e-5) * g + 1", (300, 47), np.float16, 128),
    ("m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)", (259, 27), np.float32, 128),
    ("y = x / np.abs(x).max(1, keepdims=True)\ni = x.argmin(1)\ns = x.std(1)", (77, 18), np.float32, 128),
    ("y = (x - x.mean(1, keepdims=True)) * g", (130, 13), np.float64, 128),
    ("y = x - x.mean(1, keepdims=True)\nz = y * y", (200, 30), np.float64, 64),
    ("y = x - x.mean(1, keepdims=True)\nz = np.sqrt(np.abs(y)) * y\nw = y + 1", (200, 30), np.float64, 32),
    ("y = x * (x.sum(1, keepdims=True) > 0)", (33, 5), np.float16, 128),
]


def strided_row_cases(seed=14) -> list[Case]:
    """Row kernels along a non-last axis: each row a thread's, its columns a stride
    apart; in registers (up to 32 columns) or re-read in every pass (the thread tier)."""
    from fuselab.trace.run import trace_cell
    out = []
    for k, (src, shape) in enumerate(STRIDED_ROWS):
        for dt in FLOAT_DTYPES:
            rng = np.random.default_rng(seed + k)
            ns = {"np": np, "x": rng.uniform(0.5, 2.0, shape).astype(dt),
                  "g": rng.uniform(-1, 1, shape[0]).astype(dt)}
            g = trace_cell(src, ns).graph
            inputs = {n: ns[n] for n in g.input_names()}
            rtol = 1e-2 if np.dtype(dt) == np.float16 else (1e-4 if np.dtype(dt) == np.float32 else 1e-10)
            shape_id = "x".join(map(str, shape))
            out.append(Case(f"strided-row{k}-{_name(dt)}-{shape_id}", g, inputs,
                            [one_kernel(g, Template.ROW)], rtol))
    return out


def empty_cases() -> list[Case]:
    out = []
    b = GraphBuilder()
    x = b.input("x", (0, 5), np.float32)
    g = b.build([("y", b.elemwise("exp", [x]))])
    out.append(Case("empty-pointwise", g, {"x": np.zeros((0, 5), np.float32)}, [one_kernel(g, Template.POINTWISE)]))
    for shape, axis in [((0, 5), 0), ((5, 0), 1), ((0,), None)]:
        b = GraphBuilder()
        x = b.input("x", shape, np.float32)
        g = b.build([(op, b.reduce(op, x, axis=axis)) for op in ("sum", "prod", "any", "all")])
        out.append(Case(f"empty-reduction-{shape}-{axis}", g, {"x": np.zeros(shape, np.float32)},
                        [one_kernel(g, Template.REDUCTION)]))
    return out


def view_cases(seed=6) -> list[Case]:
    """Transposes, negative-step slices, reshapes and broadcasts folded into loads."""
    rng = np.random.default_rng(seed)
    out = []
    b = GraphBuilder()
    x = b.input("x", (30, 40), np.float32)
    t = b.transpose(x, (1, 0))
    s = b.slice(t, (39, 1), (-1, 2), (40, 15))
    r = b.arange(0, 15, 1, np.int64)
    y = b.elemwise("add", [b.elemwise("multiply", [s, b.const(2.0, np.float32)]), r])
    z = b.reshape(b.elemwise("exp", [b.slice(x, (3, 0), (1, 1), (24, 40))]), (6, 4, 40))
    m = b.reduce("max", b.transpose(z, (2, 0, 1)), axis=(1,))
    g = b.build([("y", y), ("m", m)])
    inputs = {"x": rng.standard_normal((30, 40)).astype(np.float32)}
    out.append(Case("views-transpose-slice-arange", g, inputs, [unfused_plan(g)]))
    b = GraphBuilder()
    v = b.input("v", (7, 1), np.float64)
    w = b.input("w", (5,), np.float64)
    y = b.elemwise("subtract", [b.broadcast_to(v, (3, 7, 5)), w])
    g = b.build([("y", y)])
    out.append(Case("views-broadcast", g, {"v": rng.standard_normal((7, 1)), "w": rng.standard_normal(5)},
                    [one_kernel(g, Template.POINTWISE)]))
    # reversed then transposed, read at two shifts: NVVM split the constant out of
    # 568 - i % 4 * 142 + i / 4 and zero-extended the negative rest (illegal address on
    # the H200; the GPU fuzzer's seed 1204003618)
    for dt in (np.int16, np.float32):
        b = GraphBuilder()
        x = b.input("x", (5, 142), dt)
        v = b.transpose(b.slice(x, (4, 0), (-1, 1), (5, 142)), (1, 0))
        d = b.elemwise("subtract", [b.slice(v, (0, 0), (1, 1), (142, 4)), b.slice(v, (0, 1), (1, 1), (142, 4))])
        g = b.build([("d", d), ("mn", b.reduce("min", v, axis=(0, 1), keepdims=True))])
        xs = (rng.standard_normal((5, 142)) * 1000).astype(dt)
        out.append(Case(f"views-reversed-transposed-shifts-{_name(dt)}", g, {"x": xs}, [unfused_plan(g)]))
    return out


def overflow_cases(n=4099, seed=7) -> list[Case]:
    """Integer arithmetic at the edges of its range: NumPy wraps around, and the kernels
    must too (signed overflow is undefined in C++, so `x + 1 > x` may fold to true)."""
    out = []
    for dt in (np.int8, np.int16, np.uint16, np.int32, np.int64, np.uint32, np.uint64):
        info = np.iinfo(dt)
        rng = np.random.default_rng(seed)
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        x[:4] = [info.max, info.min, info.max - 1, info.min + 1]
        b = GraphBuilder()
        xi = b.input("x", (n,), dt)
        y = b.elemwise("add", [xi, b.const(1, dt)])
        outs = [("y", y), ("y_gt_x", b.elemwise("greater", [y, xi])),
                ("d", b.elemwise("subtract", [xi, b.const(info.max, dt)])),
                ("p", b.elemwise("multiply", [xi, b.const(3, dt)])),
                ("sq", b.elemwise("square", [xi])), ("neg", b.elemwise("negative", [xi])),
                ("abs", b.elemwise("absolute", [xi]))]
        g = b.build(outs)
        plans = [unfused_plan(g), one_kernel(g, Template.POINTWISE)]
        if np.dtype(dt).itemsize == 8:   # sums over a 64-bit accumulator wrap too
            b2 = GraphBuilder()
            x2 = b2.input("x", (n,), dt)
            g2 = b2.build([("s", b2.reduce("sum", x2)), ("q", b2.reduce("prod", b2.elemwise("add", [x2, b2.const(1, dt)])))])
            out.append(Case(f"overflow-sum-{_name(dt)}", g2, {"x": x}, [one_kernel(g2, Template.REDUCTION)], 0.0))
        out.append(Case(f"overflow-{_name(dt)}", g, {"x": x}, plans, 0.0))
    return out + edge_extreme_cases() + subword_lane_cases()


def edge_extreme_cases(seed=9) -> list[Case]:
    """Integer max / min / argmax of negated and absolute values at the ends of the range,
    where ptxas (CUDA 13, sm_90) miscompiled them though their PTX was right: negations
    folded into a three-input max lost one (np.max(-x, axis=1)), and abs of int16 -32768
    compared as 32768. Rows and columns, each by the template it takes."""
    out = []
    for dt in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        rng = np.random.default_rng(seed)
        x = rng.integers(-40, 40, (5, 161)).astype(dt)
        x[rng.random(x.shape) < 0.05] = info.min
        x[rng.random(x.shape) < 0.05] = info.min + 1
        x[rng.random(x.shape) < 0.05] = info.max
        x[rng.random(x.shape) < 0.03] = info.max - 1
        b = GraphBuilder()
        xi = b.input("x", x.shape, dt)
        neg = b.elemwise("negative", [xi])
        m = b.reduce("max", neg, axis=1, keepdims=True)
        g = b.build([("d", b.elemwise("subtract", [neg, m])),
                     ("lo", b.reduce("min", b.elemwise("negative", [xi]), axis=1))])
        out.append(Case(f"extreme-negated-max-rows-{_name(dt)}", g, {"x": x}, [one_kernel(g, Template.ROW)], 0.0))
        xt = np.ascontiguousarray(x.T)
        b = GraphBuilder()
        xi = b.input("x", xt.shape, dt)
        ab = b.elemwise("absolute", [xi])
        g = b.build([("am", b.reduce("argmax", ab, axis=0)), ("mx", b.reduce("max", ab, axis=0)),
                     ("mn", b.reduce("min", b.elemwise("negative", [xi]), axis=0))])
        out.append(Case(f"extreme-abs-argmax-columns-{_name(dt)}", g, {"x": xt}, [one_kernel(g, Template.REDUCTION)], 0.0))
        # abs(INT_MIN) is INT_MIN: ptxas took abs's result for non-negative and dropped the
        # dividend's sign handling of a remainder fused after it (int32, GPU fuzzer)
        y = rng.integers(1, 900, x.shape).astype(dt) * np.where(rng.random(x.shape) < 0.3, -1, 1).astype(dt)
        b = GraphBuilder()
        xi, yi = b.input("x", x.shape, dt), b.input("y", y.shape, dt)
        ab = b.elemwise("absolute", [xi])
        g = b.build([("r", b.elemwise("remainder", [ab, yi])), ("q", b.elemwise("floor_divide", [ab, yi])),
                     ("neg", b.elemwise("less", [ab, b.const(0, dt)])), ("wide", b.astype(ab, np.int64)),
                     ("sh", b.elemwise("right_shift", [ab, b.const(3, dt)]))])
        out.append(Case(f"extreme-abs-sign-consumers-{_name(dt)}", g, {"x": x, "y": y}, [one_kernel(g, Template.POINTWISE)], 0.0))
    return out


def subword_lane_cases(seed=11) -> list[Case]:
    """1- and 2-byte lanes of vector loads in arithmetic that needs their sign, and float16
    abs of packed lanes, where the CUDA toolchain miscompiled every other lane though the
    source was right (GPU fuzzer): NVVM dropped the sign extension of even int8 lanes in
    x // 2 of a row kernel's 16-byte packs, ptxas dropped `& 0x7fff` of float16 abs on
    lanes 0 and 2 of a 4-half store. Row and pointwise kernels, values over the whole range."""
    out = []
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.float16):
        rng = np.random.default_rng(seed)
        shape = (178, 96)
        if np.dtype(dt).kind == "f":
            x = (rng.standard_normal(shape) * 300).astype(dt)
        else:
            info = np.iinfo(dt)
            x = rng.integers(info.min, int(info.max) + 1, shape).astype(dt)
        b = GraphBuilder()
        xi = b.input("x", shape, dt)
        two = b.const(2, dt)
        outs = [("mn", b.reduce("min", xi, axis=1)), ("fd", b.elemwise("floor_divide", [xi, two])),
                ("ab", b.elemwise("absolute", [xi]))]
        if np.dtype(dt).kind != "f":
            outs += [("sh", b.elemwise("right_shift", [xi, b.const(1, dt)])),
                     ("md", b.elemwise("remainder", [xi, b.const(3, dt)])),
                     ("lt", b.elemwise("less", [xi, b.const(0, dt)]))]
        g = b.build(outs)
        out.append(Case(f"subword-lanes-rows-{_name(dt)}", g, {"x": x}, [one_kernel(g, Template.ROW)]))
        w = rng.integers(-3000, 3000, (33, 12)).astype(np.int32)
        b = GraphBuilder()
        wi = b.input("w", w.shape, np.int32)
        h = b.astype(b.elemwise("fmax", [wi, wi]), np.float16)
        narrow = b.astype(wi, dt)
        g = b.build([("habs", b.elemwise("absolute", [h])), ("hneg", b.elemwise("negative", [h])),
                     ("nfd", b.elemwise("floor_divide", [narrow, b.const(2, dt)])),
                     ("nab", b.elemwise("absolute", [narrow]))])
        out.append(Case(f"subword-lanes-pointwise-{_name(dt)}", g, {"w": w}, [one_kernel(g, Template.POINTWISE)]))
    return out


def power_cases(n=1000, seed=8) -> list[Case]:
    """Powers by a constant 2, 3, 4 (computed as products) and 2.5 (pow) of floats,
    with zeros, infinities, NaN, values whose power overflows and ones that underflow."""
    out = []
    for dt in FLOAT_DTYPES:
        info = np.finfo(dt)
        rng = np.random.default_rng(seed)
        x = (rng.standard_normal(n) * 3).astype(dt)
        big, tiny = float(info.max) ** 0.3, float(info.tiny) ** 0.3
        x[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, big, -big, tiny, -tiny, float(info.max)]
        b = GraphBuilder()
        xi = b.input("x", (n,), dt)
        outs = [(f"p{k}", b.elemwise("power", [xi, b.const(k, dt)])) for k in (2, 3, 4)]
        outs.append(("p2_5", b.elemwise("power", [b.elemwise("absolute", [xi]), b.const(2.5, dt)])))
        g = b.build(outs)
        out.append(Case(f"power-{_name(dt)}", g, {"x": x}, [unfused_plan(g), one_kernel(g, Template.POINTWISE)]))
    return out


def stencil_cases(seed=9) -> list[Case]:
    """Shifted windows of one array (x[:-4] + x[1:-3] + ... + x[4:]): every shift of a
    vector's elements, lengths of every remainder, 1- to 8-byte types (vector widths 16
    to 2), and 2-D windows whose rows shift."""
    out = []
    for dt in (np.int8, np.float16, np.float32, np.float64):
        for n in (64, 67, 70, 101):
            rng = np.random.default_rng(seed)
            b = GraphBuilder()
            x = b.input("x", (n,), dt)
            y = b.slice(x, (0,), (1,), (n - 4,))
            for k in range(1, 5):
                y = b.elemwise("add", [y, b.slice(x, (k,), (1,), (n - 4,))])
            tail = b.elemwise("multiply", [b.slice(x, (3,), (1,), (n - 4,)), b.const(2, dt)])
            g = b.build([("y", y), ("tail", tail)])
            out.append(Case(f"stencil-1d-{_name(dt)}-{n}", g, {"x": sample(dt, (n,), rng)},
                            [one_kernel(g, Template.POINTWISE)], 1e-2 if np.dtype(dt) == np.float16 else None))
    for shape in ((10, 36), (9, 37)):
        rng = np.random.default_rng(seed)
        b = GraphBuilder()
        x = b.input("x", shape, np.float32)
        inner = (shape[0] - 2, shape[1] - 2)
        win = lambda r, c: b.slice(x, (r, c), (1, 1), inner)
        y = b.elemwise("subtract", [b.elemwise("multiply", [win(1, 1), b.const(4.0, np.float32)]),
                                    b.elemwise("add", [b.elemwise("add", [win(0, 1), win(2, 1)]),
                                                       b.elemwise("add", [win(1, 0), win(1, 2)])])])
        g = b.build([("y", y)])
        out.append(Case(f"stencil-2d-{shape}", g, {"x": sample(np.float32, shape, rng)},
                        [one_kernel(g, Template.POINTWISE)], 1e-5))

    def seven_point(shape, dt):
        b = GraphBuilder()
        x = b.input("x", shape, dt)
        inner = tuple(d - 2 for d in shape)
        win = lambda *at: b.slice(x, at, (1, 1, 1), inner)
        y = b.elemwise("multiply", [win(1, 1, 1), b.const(6, dt)])
        for at in ((0, 1, 1), (2, 1, 1), (1, 0, 1), (1, 2, 1), (1, 1, 0), (1, 1, 2)):
            y = b.elemwise("subtract", [y, win(*at)])
        return b.build([("y", y)])

    for dt, shape in ((np.float64, (5, 6, 20)), (np.float32, (4, 5, 44)), (np.float16, (3, 4, 72))):
        rng = np.random.default_rng(seed)
        g = seven_point(shape, dt)
        out.append(Case(f"stencil-3d-{_name(dt)}-{shape}", g, {"x": sample(dt, shape, rng)},
                        [one_kernel(g, Template.POINTWISE)], 1e-2 if dt == np.float16 else 1e-5))
    # the stencil path (several rows a thread along an outer axis): row counts no multiple
    # of the rows a thread takes, vector and element stores, 1- to 8-byte types, outer
    # extents of 1 (another axis marched, or the row path), two outputs and a broadcast row
    def five_point(shape, dt):
        b = GraphBuilder()
        x = b.input("x", shape, dt)
        inner = tuple(d - 2 for d in shape)
        win = lambda r, c: b.slice(x, (r, c), (1, 1), inner)
        y = b.elemwise("subtract", [b.elemwise("multiply", [win(1, 1), b.const(4, dt)]),
                                    b.elemwise("add", [b.elemwise("add", [win(0, 1), win(2, 1)]),
                                                       b.elemwise("add", [win(1, 0), win(1, 2)])])])
        return b.build([("y", y)])


    for make, dt, shape in ((five_point, np.int32, (11, 44)), (five_point, np.float16, (7, 72)),
                            (five_point, np.float64, (6, 20)), (five_point, np.float32, (13, 44)),
                            (five_point, np.int8, (5, 48)), (five_point, np.float32, (3, 16)),
                            (seven_point, np.int16, (4, 9, 40)), (seven_point, np.float32, (3, 7, 20)),
                            (seven_point, np.float32, (7, 3, 36)), (seven_point, np.float64, (6, 5, 12))):
        rng = np.random.default_rng(seed)
        g = make(shape, dt)
        out.append(Case(f"stencil-rows-{_name(dt)}-{shape}", g, {"x": sample(dt, shape, rng)},
                        [one_kernel(g, Template.POINTWISE)], 1e-2 if np.dtype(dt) == np.float16 else None))
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (9, 40), np.float32)
    w = b.input("w", (40,), np.float32)
    y = b.elemwise("add", [b.elemwise("multiply", [b.slice(x, (1, 1), (1, 1), (7, 38)), b.slice(w, (1,), (1,), (38,))]),
                           b.slice(x, (2, 1), (1, 1), (7, 38))])
    z = b.elemwise("subtract", [b.slice(x, (0, 2), (1, 1), (7, 38)), b.slice(x, (1, 0), (1, 1), (7, 38))])
    g = b.build([("y", y), ("z", z)])
    out.append(Case("stencil-rows-two-outputs", g, {"x": sample(np.float32, (9, 40), rng),
                                                    "w": sample(np.float32, (40,), rng)},
                    [one_kernel(g, Template.POINTWISE)], None))
    # rows cut at a vector boundary: vectors stored whole along each row
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (6, 40), np.float32)
    y = b.elemwise("add", [b.elemwise("multiply", [b.slice(x, (0, 4), (1, 1), (6, 36)), b.const(2.0, np.float32)]),
                           b.slice(x, (0, 1), (1, 1), (6, 36))])
    g = b.build([("y", y)])
    out.append(Case("stencil-rows-cut", g, {"x": sample(np.float32, (6, 40), rng)},
                    [one_kernel(g, Template.POINTWISE)], 1e-6))
    return out


def variance_cases(seed=10) -> list[Case]:
    """np.var's one-pass reduction (Welford's state, Chan's combine) in every layout: a split
    full reduction, columns, rows, a middle axis, integers (in float64), ddof, a row kernel
    normalising by it (layernorm as people write it with np.var), and values far from 0."""
    out = []
    for dt, shape, axis, ddof in [(np.float32, (20000,), None, 0), (np.float32, (33, 65), 0, 1),
                                  (np.float32, (33, 65), 1, 0), (np.float64, (6, 4000, 40), 1, 0),
                                  (np.int32, (8, 3000), 1, 1), (np.float64, (3000, 64), 0, 2)]:
        rng = np.random.default_rng(seed)
        b = GraphBuilder()
        x = b.input("x", shape, dt)
        out_dt = np.float64 if np.dtype(dt).kind == "i" else dt
        v = b.reduce("var", x, axis=axis, dtype=out_dt, ddof=ddof)
        g = b.build([("v", v), ("s", b.elemwise("sqrt", [v]))])
        x = sample(dt, shape, rng) if np.dtype(dt).kind == "i" else \
            (rng.standard_normal(shape) * 3 + 1000).astype(dt)
        out.append(Case(f"variance-{_name(dt)}-{shape}-{axis}-ddof{ddof}", g, {"x": x},
                        [one_kernel(g, Template.REDUCTION)], 1e-4 if dt == np.float32 else None))
    for cols in (7, 1030):
        b = GraphBuilder()
        x = b.input("x", (5, cols), np.float32)
        mean = b.elemwise("true_divide", [b.reduce("sum", x, axis=-1, keepdims=True), b.const(float(cols), np.float32)])
        var = b.reduce("var", x, axis=-1, keepdims=True, dtype=np.float32)
        y = b.elemwise("true_divide", [b.elemwise("subtract", [x, mean]),
                                       b.elemwise("sqrt", [b.elemwise("add", [var, b.const(1e-5, np.float32)])])])
        g = b.build([("y", y)])
        inputs = {"x": np.random.default_rng(seed).uniform(-2, 2, (5, cols)).astype(np.float32)}
        out.append(Case(f"variance-row-layernorm-5x{cols}", g, inputs, [one_kernel(g, Template.ROW)], 1e-4))
    # far from 0 against their spread (deviation 1): unshifted one-pass states lost digits
    # (8e-5 relative at mean 1e4 along rows, where NumPy's two passes keep 1e-6)
    for shape, axis, mean in (((33, 4000), 1, 1e4), ((4000, 33), 0, 1e3), ((200000,), None, 1e3)):
        b = GraphBuilder()
        x = b.input("x", shape, np.float32)
        g = b.build([("v", b.reduce("var", x, axis=axis, dtype=np.float32))])
        inputs = {"x": (np.random.default_rng(seed).standard_normal(shape) + mean).astype(np.float32)}
        out.append(Case(f"variance-far-from-zero-{shape}-{axis}", g, inputs, [one_kernel(g, Template.REDUCTION)], 1e-5))
    # z-scores over an axis of 2 or 3 whose elements sit a few ulps apart: NumPy's squared
    # deviations are from its rounded mean (sum / n); a one-pass state that leaves out
    # n (mean - m)^2 gave 2e-3 off (the H200 sweep's (2, 922, 4862), axis 0)
    for rows in (2, 3):
        rng = np.random.default_rng(seed + rows)
        x = np.empty((rows, 2000), np.float32)
        x[0] = rng.uniform(0.5, 4.0, 2000).astype(np.float32)
        for k in range(1, rows):
            x[k] = x[k - 1] + rng.integers(1, 5, 2000).astype(np.float32) * np.spacing(x[k - 1])
        b = GraphBuilder()
        xi = b.input("x", (rows, 2000), np.float32)
        mean = b.elemwise("true_divide", [b.reduce("sum", xi, axis=0, keepdims=True), b.const(float(rows), np.float32)])
        std = b.elemwise("sqrt", [b.reduce("var", xi, axis=0, keepdims=True, dtype=np.float32)])
        g = b.build([("y", b.elemwise("true_divide", [b.elemwise("subtract", [xi, mean]), std]))])
        out.append(Case(f"variance-rounded-mean-{rows}x2000", g, {"x": x}, [unfused_plan(g), one_kernel(g, Template.ROW)],
                        1e-5, untuned=True))
    out += variance_overflow_cases()
    return out


def variance_overflow_cases() -> list[Case]:
    """Where NumPy's two passes in the result's dtype overflow and Welford's state need not:
    a sum past the largest finite value (inf), squared deviations past it (inf), an infinite
    element (NaN), a NaN; float16 whose sum of squares passes 65504 (inf, though the variance
    is 225). Rows, columns and a split full reduction, each by the template it takes."""
    out = []
    for dt, big in ((np.float64, 1.7e308), (np.float32, 3.3e38), (np.float16, 65000.0)):
        rows = np.ones((6, 300), dt)
        rows[0] = big                                     # the sum overflows: inf (Welford: 0)
        rows[1, 3], rows[1, 4] = big / 2, -big / 2        # squared deviations overflow: inf
        rows[2, 7] = np.inf                               # NaN
        rows[3, 9] = np.nan                               # NaN
        rows[4, 5] = -np.inf                              # NaN
        rows[5] = np.tile(np.array([0, 30], dt), 150) if dt == np.float16 else np.arange(300)
        for axis, x in ((1, rows), (0, np.ascontiguousarray(rows.T))):
            b = GraphBuilder()
            xi = b.input("x", x.shape, dt)
            g = b.build([("v", b.reduce("var", xi, axis=axis, dtype=dt))])
            out.append(Case(f"variance-overflow-{_name(dt)}-axis{axis}", g, {"x": x},
                            [one_kernel(g, Template.REDUCTION)], 1e-2 if dt == np.float16 else None))
        b = GraphBuilder()
        xi = b.input("x", (40000,), dt)
        g = b.build([("v", b.reduce("var", xi, dtype=dt))])
        out.append(Case(f"variance-overflow-{_name(dt)}-split", g, {"x": np.full(40000, big / 4, dt)},
                        [one_kernel(g, Template.REDUCTION)], 1e-2 if dt == np.float16 else None))
    return out


def gather_cases(seed=15) -> list[Case]:
    """Broadcast operands whose runs are no multiple of a vector, read element by element
    while the rest moves as vectors (pointwise's gathered loads), with a tail of elements
    past the last whole vector; and reductions whose runs take only narrower vectors."""
    rng = np.random.default_rng(seed)
    out = []
    for dt in (np.float16, np.float32, np.float64, np.int8):
        b = GraphBuilder()
        x = b.input("x", (5, 13, 33), dt)
        s = b.input("s", (5, 1, 33), dt)
        w = b.input("w", (13,), dt)
        ww = b.broadcast_to(b.reshape(w, (13, 1)), (5, 13, 33))
        y = b.elemwise("multiply", [b.elemwise("subtract", [x, b.broadcast_to(s, (5, 13, 33))]), ww])
        col = b.arange(0, 33, 1, dt)
        z = b.elemwise("add", [x, b.broadcast_to(col, (5, 13, 33))])
        g = b.build([("y", y), ("z", z)])
        inputs = {"x": sample(dt, (5, 13, 33), rng), "s": sample(dt, (5, 1, 33), rng), "w": sample(dt, (13,), rng)}
        out.append(Case(f"gather-broadcast-{_name(dt)}", g, inputs, [unfused_plan(g)]))
    for dt, shape, axis in ((np.float16, (3, 5, 18), (0, 2)), (np.float32, (3, 5, 54), (0, 2)),
                            (np.float16, (40, 6), (0,)), (np.float32, (40, 6), (0,))):
        b = GraphBuilder()
        x = b.input("x", shape, dt)
        g = b.build([("s", b.reduce("sum", x, axis=axis)), ("m", b.reduce("max", x, axis=axis))])
        out.append(Case(f"narrow-vectors-{_name(dt)}-{'x'.join(map(str, shape))}", g,
                        {"x": sample(dt, shape, rng)}, [unfused_plan(g)]))
    return out


def all_cases() -> list[Case]:
    return (elementwise_cases() + cast_cases() + reduction_cases() + prod_cases() + fused_reduction_cases()
            + row_cases() + strided_row_cases() + empty_cases() + view_cases() + overflow_cases() + power_cases() + stencil_cases()
            + variance_cases() + transposed_reduction_cases() + transposed_pointwise_cases() + gather_cases())
