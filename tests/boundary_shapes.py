"""Shapes on both sides of every launch-configuration threshold of the CUDA templates,
run on the CPU emulator of CUDA against NumPy (tests/test_boundary_shapes.py).

The templates pick their layout per shape: vector widths from dtypes and the alignment
of row starts and view offsets, the transpose path's tiles, the stencil and row-vector
paths, inner reductions' lanes / blocks / splits and runs aligned to memory, the column
strategy's lanes, widths, rows of threads and splits, the row kernels' tiers, packs and
register budgets, strided rows' thread / staged / slab tiers. Each family below builds
cells (NumPy source and arrays) whose threshold axis sits at, below and above each
decision point, the other axes kept small for the emulator, over dtypes and layouts (C,
transposed, sliced with offsets so that row starts are misaligned, negative strides,
broadcast operands). `run_cases` traces each cell, plans it ("auto", "max", and the
family's template forced on the whole cell where legality allows), and runs every plan
under the heuristic, every launch candidate of every kernel, and every forced row tier,
comparing with NumPy (fuselab.runtime.verify.compare) and reporting emulator faults
(misaligned vector loads, and, here, misaligned vector stores) as failures.

Decision points (file: function, threshold) -- both sides of each are generated:
- element.vector_width: 16 // itemsize lanes (bool/int8 16, float16 8, float32 4,
  float64 2); n % W in {0, 1, W - 1}, n < W; offsets of views (x[s:]) % W; shifted loads
  near the end of their array (shifted_groups); gathers of operands <= n / GATHER_REUSE.
- tables.table_nodes: broadcast-only values <= TABLE_MAX (1024) elements.
- pointwise._transpose_path / _Transpose.tile: last axis >= 8, axis a >= 8,
  ta = min(32, pow2 >= A) (A = 8, 9, 16, 17, 31, 32, 33), tc = 1024 / ta, tile edges.
- pointwise._row_path and stencil.analyse: rows >= 8 columns, groups * W * 2 >= cols,
  vector stores when cols % W == 0, store_width gcd(cols, W), the marched axis's extent
  against the rows a thread takes (rows_heuristic).
- reduce_layout.inner_split: group = min(32, pow2(ceil(R / 8W))) (R = 8W, 8W + 1),
  block mode when K * 32 < sm_count * 1024 (K = 63, 64, 65 with 2 SMs), splits
  R // MIN_PER_BLOCK (8191, 8192, 8193, 12289).
- reduction._inner_setup / _aligned_runs: R % W, R >= ALIGNED_MIN_VECTORS * W
  (4W - 1, 4W, 4W + 1), R < W; transposed views read in memory order.
- reduce_layout.is_column / column_split and reduction._column: last kept run K2 >= 32
  or R >= 64 (31/32/33 x 63/64/65), width <= 4 dividing K2, lanes = pow2(K2 / width),
  rows of threads > TREE_FOLD_ROWS (16), splits R // (128 * 32 / lanes), Welford's one
  row of threads, FOLD_LIMIT, 3-D / 4-D middle-axis reductions, 1 and 65537 columns.
- row._pack / _aligned_packs: pack 16 // itemsize, C % pack, C >= ALIGNED_MIN_PACKS *
  pack; row._heuristic: WARP_MAX_COLS (1024 / 1025), rows of < 32 odd columns (4 a lane),
  REG_ELEMS (32, 16 for float64: 512 / 513 float64 columns), block tier 512 x 32 (16384 /
  16385), REG_BUDGET with two row-cached inputs, SMEM_LIMIT (float32 51200 / 51201 with
  the aligned span), column inputs in registers; strided rows: WARP_ELEMS_MAX (64 / 65),
  staged strides 2..31 (t <= 256), slabs (cols * min(S, 32) >= 2048, S against 32).
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import numpy as np

import fuselab
from fuselab.codegen import CodegenOptions, KernelCode, generate, launch_candidates
from fuselab.codegen.prelude import SNIPPETS
from fuselab.interp import run_graph
from fuselab.plan import Template, make_plan
from fuselab.plan.legality import DEFAULT_BUDGETS
from fuselab.plan.model import Plan
from fuselab.runtime.verify import compare

import cuda_host
from cuda_host import EMULATED, EmulatorError, HostRunner
from graphs import one_kernel, sample

ROW_TIERS = ("warp", "block", "smem", "looped")
STRIDED_TIERS = ("warp", "thread", "staged", "slab", "slab-smem")
RTOL = {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 5e-5, np.dtype(np.float64): 1e-11}


@dataclass
class BCase:
    id: str
    family: str
    point: str                       # the decision point whose side this case sits on
    source: str
    arrays: dict[str, np.ndarray]
    template: Template | None = None   # forced on the whole cell too, where legal
    tiers: tuple[str, ...] = ()        # row tiers forced one at a time
    ci: bool = False
    rtol: float | None = None


def _w(dt) -> int:
    return max(1, 16 // np.dtype(dt).itemsize)


def _data(dt, shape, seed: int, offset: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = sample(dt, shape, rng)
    if offset and np.dtype(dt).kind == "f":
        x = (x.astype(np.float64) + offset).astype(dt)
    return x


def _name(dt) -> str:
    return np.dtype(dt).name


# ---------------------------------------------------------------------------
# Pointwise: flat vectors, shifted slices, gathers, tables, transposes, rows, stencils
# ---------------------------------------------------------------------------

def _pw_expr(dt) -> str:
    return "np.logical_xor(x, z)" if np.dtype(dt).kind == "b" else "x * z + x"


def pointwise_cases() -> list[BCase]:
    out: list[BCase] = []
    dtypes = (np.bool_, np.int8, np.float16, np.float32, np.float64)
    for dt in dtypes:
        W = _w(dt)
        for n in sorted({1, W - 1, W, W + 1, 4 * W - 1, 4 * W + 1, 67}):
            if n < 1:
                continue
            out.append(BCase(f"pw-flat-{_name(dt)}-{n}", "pointwise", f"n % {W} vectors", f"y = {_pw_expr(dt)}",
                             {"x": _data(dt, (n,), n), "z": _data(dt, (n,), n + 1)},
                             Template.POINTWISE, ci=n in (W - 1, W + 1)))
        # shifted slices, near the end of their array: x[s:s+n] + x[s+1:...]
        for s in sorted({1, W - 1, W + 1} - {0}):
            for extra in sorted({0, 1, W}):
                n = 4 * W + 3
                size = n + s + 1 + extra
                src = f"y = x[{s}:{s + n}] + x[{s + 1}:{s + 1 + n}] * 2" if np.dtype(dt).kind != "b" else \
                    f"y = x[{s}:{s + n}] ^ x[{s + 1}:{s + 1 + n}]"
                out.append(BCase(f"pw-shift-{_name(dt)}-s{s}-e{extra}", "pointwise", "shifted loads near the end",
                                 src, {"x": _data(dt, (size,), s + extra)}, Template.POINTWISE,
                                 ci=(s == 1 and extra == 0)))
        # negative and non-unit strides
        for src, shape in ((f"y = x[::-1] {'^ True' if np.dtype(dt).kind == 'b' else '* 3'}", (4 * W + 1,)),
                           ("y = x[::-2] == x[1::2][::-1]", (2 * (2 * W + 1),)),
                           ("y = x[::-1, 1:] != x[:, :-1]", (5, 2 * W + 1)),
                           ("y = x[:, ::-1][1:, ::2] == x[:-1, ::2]", (4, 2 * W + 2))):
            out.append(BCase(f"pw-stride-{_name(dt)}-{src[4:20]}-{shape}", "pointwise", "negative strides",
                             src, {"x": _data(dt, shape, len(src))}, Template.POINTWISE, ci=shape[0] == 5))
        if np.dtype(dt).kind == "b":
            continue
        # broadcast operands: gathered where they are at most 1/4 of the elements
        for rows in (3, 4, 5):
            for m in sorted({W - 1, W + 1, 2 * W + 2, 33} - {0}):
                out.append(BCase(f"pw-gather-{_name(dt)}-{rows}x{m}", "pointwise", "gather <= n / 4",
                                 "y = x * g - g", {"x": _data(dt, (rows, m), m), "g": _data(dt, (m,), m + 1)},
                                 Template.POINTWISE, ci=(rows == 4 and m == W + 1)))
        for m in sorted({7, W + 1, 33}):
            out.append(BCase(f"pw-outer-{_name(dt)}-{m}", "pointwise", "outer product, odd rows",
                             "y = a[:, None] * b[None, :]", {"a": _data(dt, (5,), 2), "b": _data(dt, (m,), 3)},
                             Template.POINTWISE, ci=m == 7))
    # tables of broadcast-only values: 1024 / 1025 elements
    for m in (1024, 1025):
        for dt in (np.float16, np.float32):
            out.append(BCase(f"pw-tables-{_name(dt)}-{m}", "pointwise", "TABLE_MAX 1024",
                             "y = x * np.sqrt(g * g + 1) + g", {"x": _data(dt, (3, m), 5), "g": _data(dt, (m,), 6)},
                             Template.POINTWISE, ci=(m == 1025 and dt == np.float16)))
    return out


def transpose_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.int8, np.float16, np.float32, np.float64):
        for A in (7, 8, 9, 16, 17, 31, 32, 33):
            ta = min(32, 1 << (A - 1).bit_length())
            tc = 1024 // ta
            for C in sorted({7, 8, tc - 1, tc + 1}):
                if A * C > 6000:
                    C = 8 if C > 100 else C
                ci = (A, C) in ((8, 127), (9, 7), (33, 33)) or (A == 17 and C == tc + 1 and dt == np.float16)
                out.append(BCase(f"tr-{_name(dt)}-{A}x{C}", "transpose", "tile ta x tc, A >= 8, C >= 8",
                                 "y = x.T * 2 + z", {"x": _data(dt, (C, A), A + C), "z": _data(dt, (A, C), A)},
                                 Template.POINTWISE, ci=ci))
        # 3-D, sliced with offsets, reversed
        for src, shape in (("y = x.transpose(2, 1, 0) + 1", (9, 3, 17)),
                           ("y = x[1:, 2:].T * 3", (34, 11)),
                           ("y = x[::-1].T[..., :-1] - 1", (9, 33)),
                           ("y = x[:, ::-1].T + x[:, ::-1].T", (40, 9)),
                           ("y = x.transpose(0, 2, 1)[:, 1:, :] * 2", (2, 17, 9))):
            out.append(BCase(f"tr-view-{_name(dt)}-{src[4:24]}", "transpose", "transposed views with offsets",
                             src, {"x": _data(dt, shape, len(src))}, Template.POINTWISE, ci=dt == np.float16))
    return out


def row_path_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.int8, np.float16, np.float32, np.float64):
        W = _w(dt)
        for cols in sorted({7, 8, 9, 2 * W - 1, 2 * W, 2 * W + 1, 3 * W + 3}):
            out.append(BCase(f"rowpath-{_name(dt)}-{cols}", "row-vector", "cols >= 8, groups*W*2 >= cols",
                             "y = x[1:-1, 2:] * 2 - x[1:-1, 1:-1]", {"x": _data(dt, (4, cols + 2), cols)},
                             Template.POINTWISE, ci=cols in (9, 2 * W + 1)))
        for cols in sorted({8, 9, 2 * W - 1, 2 * W + 1, 4 * W + 2}):
            for rows in (1, 2, 3, 5):
                src = ("y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]")
                out.append(BCase(f"stencil-{_name(dt)}-{rows}x{cols}", "stencil", "stencil rows, store_width",
                                 src, {"x": _data(dt, (rows + 2, cols + 2), rows * cols)}, Template.POINTWISE,
                                 ci=(rows, cols) in ((1, 9), (3, 2 * W + 1))))
        out.append(BCase(f"stencil3d-{_name(dt)}", "stencil", "3-D stencil",
                         "y = x[1:-1, 1:-1, 1:-1] * 6 - x[:-2, 1:-1, 1:-1] - x[2:, 1:-1, 1:-1] - x[1:-1, :-2, 1:-1]"
                         " - x[1:-1, 2:, 1:-1] - x[1:-1, 1:-1, :-2] - x[1:-1, 1:-1, 2:]",
                         {"x": _data(dt, (4, 5, 2 * W + 3), 9)}, Template.POINTWISE, ci=dt == np.float32))
    return out


# ---------------------------------------------------------------------------
# Reductions: inner (lanes, blocks, splits, aligned runs) and column
# ---------------------------------------------------------------------------

def _red_ops(dt) -> str:
    k = np.dtype(dt).kind
    if k == "b":
        return "s = x.sum({a})\nm = x.any({a})\ni = x.argmax({a})"
    if k == "f":
        return "s = x.sum({a})\nm = x.max({a})\ni = x.argmax({a})\nv = x.var({a})"
    return "s = x.sum({a})\nm = x.min({a})\ni = x.argmin({a})"


def _rtol_red(dt) -> float | None:
    return 5e-2 if np.dtype(dt) == np.float16 else None


def inner_reduction_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.bool_, np.int8, np.float16, np.float32, np.float64):
        W = _w(dt)
        for R in sorted({1, 2, W - 1, W, W + 1, 4 * W - 1, 4 * W, 4 * W + 1, 8 * W, 8 * W + 1}):
            if R < 1:
                continue
            src = _red_ops(dt).format(a="axis=1")
            out.append(BCase(f"inner-{_name(dt)}-3x{R}", "inner", "aligned runs R % W, R >= 4W, group 8W",
                             src, {"x": _data(dt, (3, R), R, 3.0)}, Template.REDUCTION,
                             ci=R in (4 * W - 1, 4 * W + 1), rtol=_rtol_red(dt)))
            # the same runs starting off a vector boundary (a view with an offset) and reversed
            for view, shape in (("x[:, 1:]", (3, R + 1)), ("x[1:, :]", (4, R)), ("x[:, ::-1]", (3, R))):
                out.append(BCase(f"inner-view-{_name(dt)}-{view}-{R}", "inner", "runs of views off a vector boundary",
                                 _red_ops(dt).format(a="axis=1").replace("x.", f"{view}."),
                                 {"x": _data(dt, shape, R + 7, 3.0)}, Template.REDUCTION,
                                 ci=R == 4 * W + 1 and dt in (np.float16, np.float32), rtol=_rtol_red(dt)))
        for K in (63, 64, 65):
            out.append(BCase(f"inner-K-{_name(dt)}-{K}", "inner", "block mode K * 32 < sm * 1024",
                             _red_ops(dt).format(a="axis=1"), {"x": _data(dt, (K, 4 * W + 1), K, 3.0)},
                             Template.REDUCTION, ci=K == 64 and dt == np.float32, rtol=_rtol_red(dt)))
        for n in (8191, 8192, 8193, 12289):
            ops = "s = x.sum()\nm = x.max()\ni = x.argmax()" if np.dtype(dt).kind != "b" else "s = x.sum()\nm = x.all()"
            out.append(BCase(f"inner-split-{_name(dt)}-{n}", "inner", "splits R // 4096",
                             ops, {"x": _data(dt, (n,), n)}, Template.REDUCTION,
                             ci=n == 8193 and dt == np.float16, rtol=_rtol_red(dt)))
            out.append(BCase(f"inner-split-view-{_name(dt)}-{n}", "inner", "splits of a view with an offset",
                             ops.replace("x.", "x[3:].").replace("x[3:].argmax()", "x[3:].argmax()"),
                             {"x": _data(dt, (n + 3,), n + 3)}, Template.REDUCTION,
                             ci=n == 8193 and dt == np.float32, rtol=_rtol_red(dt)))
    # stored values of the input's shape beside the reduction (the prologue's vector stores)
    for dt in (np.int8, np.float16, np.float32, np.float64):
        W = _w(dt)
        for R in sorted({W - 1, 4 * W - 1, 4 * W + 1, 8 * W + 2}):
            out.append(BCase(f"inner-prologue-{_name(dt)}-{R}", "inner", "prologue stores over aligned runs",
                             "y = x * 3\ns = y.sum(-1)\ni = y.argmax(-1)", {"x": _data(dt, (5, R), R)},
                             Template.REDUCTION, ci=R == 4 * W + 1 and dt == np.float16, rtol=_rtol_red(dt)))
            out.append(BCase(f"inner-prologue-mixed-{_name(dt)}-{R}", "inner", "prologue stores, mixed widths",
                             "y = x.astype(np.float64) - 1\ns = y.sum(-1)\nc = (x > 0).sum(-1)",
                             {"x": _data(dt, (5, R), R)}, Template.REDUCTION, ci=R == 4 * W - 1 and dt == np.int8))
    # Welford over inner runs, float16 paths, keepdims broadcast back (prologue + epilogue)
    for dt in (np.float16, np.float32, np.float64):
        W = _w(dt)
        for R in (4 * W - 1, 4 * W + 1, 8 * W + 3):
            out.append(BCase(f"inner-std-{_name(dt)}-{R}", "inner", "Welford std over aligned runs",
                             "s = x.std(axis=-1)\nc = x - x.mean(axis=-1, keepdims=True)",
                             {"x": _data(dt, (5, R), R, 100.0)}, Template.REDUCTION, ci=R == 4 * W + 1,
                             rtol=_rtol_red(dt)))
    return out


def column_reduction_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.int8, np.float16, np.float32, np.float64):
        for K2 in (1, 2, 3, 4, 5, 8, 9, 31, 32, 33, 129):
            for R in (2, 63, 64, 65, 129):
                if K2 * R > 9000 or (K2 not in (31, 32, 33) and R in (63, 65)):
                    continue
                ci = (K2, R) in ((31, 64), (33, 63), (5, 129)) and dt in (np.float16, np.float32)
                out.append(BCase(f"col-{_name(dt)}-{R}x{K2}", "column", "K2 >= 32 or R >= 64, lanes, width",
                                 _red_ops(dt).format(a="axis=0"), {"x": _data(dt, (R, K2), R * K2, 3.0)},
                                 Template.REDUCTION, ci=ci, rtol=_rtol_red(dt)))
        # columns starting off a vector boundary, reversed, transposed, 3-D and 4-D middle axes
        for src, shape in (("x[:, 1:]", (65, 34)), ("x[1:]", (66, 33)), ("x[:, 2:-1]", (64, 11)),
                           ("x[::-1]", (65, 36)), ("x[:, ::-1]", (65, 36)), ("x.T", (36, 65))):
            out.append(BCase(f"col-view-{_name(dt)}-{src}", "column", "column views with offsets",
                             _red_ops(dt).format(a="axis=0").replace("x.", f"{src}."),
                             {"x": _data(dt, shape, shape[0], 3.0)}, Template.REDUCTION,
                             ci=src in ("x[:, 1:]", "x[1:]"), rtol=_rtol_red(dt)))
        for shape, axis in (((3, 65, 33), 1), ((2, 129, 5), 1), ((3, 64, 2), 1), ((2, 5, 7, 9), (1, 2)),
                            ((3, 17, 4, 33), (0, 2)), ((4, 300, 1), 1), ((1, 300, 1), (0, 1))):
            a = f"axis={axis}"
            src = ("s = x.sum({a})\nm = x.max({a})" + ("\ni = x.argmax({a})" if isinstance(axis, int) else "")
                   + ("\nv = x.var({a})" if np.dtype(dt).kind == "f" else "")).format(a=a)
            out.append(BCase(f"col-nd-{_name(dt)}-{shape}-{axis}", "column", "3-D / 4-D middle axes",
                             src, {"x": _data(dt, shape, sum(shape), 3.0)}, Template.REDUCTION,
                             ci=shape == (3, 65, 33), rtol=_rtol_red(dt)))
    # stored values of the input's shape beside a column reduction (vector stores)
    for dt in (np.int8, np.float16, np.float32):
        for K2 in (3, 33, 36, 130):
            out.append(BCase(f"col-prologue-{_name(dt)}-{K2}", "column", "prologue stores, column widths",
                             "y = x * 3\ns = y.sum(0)\nm = y.max(0)", {"x": _data(dt, (70, K2), K2)},
                             Template.REDUCTION, ci=K2 == 33 and dt == np.float16, rtol=_rtol_red(dt)))
            out.append(BCase(f"col-prologue-view-{_name(dt)}-{K2}", "column", "prologue stores of a view",
                             "y = x[1:, 1:] * 3\ns = y.sum(0)", {"x": _data(dt, (71, K2 + 1), K2)},
                             Template.REDUCTION, ci=K2 == 36 and dt == np.float32, rtol=_rtol_red(dt)))
    # tree folds: rows of threads > 16 (short kept runs: 32 / lanes rows a warp)
    for dt in (np.float32, np.float16):
        for K2 in (2, 4):
            for R in (255, 256, 257, 1025):
                out.append(BCase(f"col-tree-{_name(dt)}-{R}x{K2}", "column", "TREE_FOLD_ROWS, splits",
                                 "s = x.sum(0)\nv = x.std(0)\ni = x.argmax(0)",
                                 {"x": _data(dt, (R, K2), R, 10.0)}, Template.REDUCTION, ci=R == 257,
                                 rtol=_rtol_red(dt)))
    # the reduced axis split over blocks: R // (128 * 32 / lanes) and the SMs' target
    for dt in (np.float16, np.float32, np.float64, np.int8):
        for K2 in (31, 32, 33, 65, 7):
            for R in (255, 256, 257, 511, 513, 1025, 2049):
                if K2 * R > 70000 or (K2 == 7 and R < 1025):
                    continue
                out.append(BCase(f"col-split-{_name(dt)}-{R}x{K2}", "column", "column splits",
                                 _red_ops(dt).format(a="axis=0"), {"x": _data(dt, (R, K2), R + K2, 3.0)},
                                 Template.REDUCTION, ci=(R, K2) in ((257, 33), (513, 32)) and dt == np.float32,
                                 rtol=_rtol_red(dt)))
        for shape in ((2, 257, 33), (3, 513, 8)):
            out.append(BCase(f"col-split-krk-{_name(dt)}-{shape}", "column", "column splits, middle axis",
                             _red_ops(dt).format(a="axis=1"), {"x": _data(dt, shape, sum(shape), 3.0)},
                             Template.REDUCTION, rtol=_rtol_red(dt)))
        for K, R in ((2, 8193), (3, 12289), (2, 16385)):
            out.append(BCase(f"inner-split-K-{_name(dt)}-{K}x{R}", "inner", "inner splits with K outputs",
                             _red_ops(dt).format(a="axis=1"), {"x": _data(dt, (K, R), K + R, 3.0)},
                             Template.REDUCTION, ci=(K, R) == (3, 12289) and dt == np.float16, rtol=_rtol_red(dt)))
    # 1 column and 65537 columns
    out.append(BCase("col-wide-65537", "column", "65537 kept columns", "s = x.sum(0)\nv = x.var(0)",
                     {"x": _data(np.float32, (3, 65537), 1)}, Template.REDUCTION))
    out.append(BCase("col-one-column", "column", "one kept column", "s = x.sum(0)\nv = x.var(0)\ni = x.argmax(0)",
                     {"x": _data(np.float32, (70, 1), 1)}, Template.REDUCTION, ci=True))
    return out


# ---------------------------------------------------------------------------
# Rows: tiers, packs aligned to memory, register budgets, strided rows
# ---------------------------------------------------------------------------

ROW_CELLS = {
    "softmax": "m = x.max(-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(-1, keepdims=True)",
    "layernorm": ("mu = x.mean(-1, keepdims=True)\nv = ((x - mu) ** 2).mean(-1, keepdims=True)\n"
                  "y = (x - mu) / np.sqrt(v + 1e-5) * g + b"),
    "std": "y = (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1)\ni = x.argmax(-1)",
    "two": "p = x * z\ny = p / (np.abs(p).sum(-1, keepdims=True) + 1)",
    "mixed": "y = x.astype(np.float32) / (np.abs(x.astype(np.float32)).sum(-1, keepdims=True) + 1)\nm = x.max(-1)",
}


def _row_arrays(dt, rows: int, cols: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": _data(dt, (rows, cols), seed), "z": _data(dt, (rows, cols), seed + 1),
            "g": _data(dt, (cols,), seed + 2), "b": _data(dt, (cols,), seed + 3)}


def row_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.float16, np.float32, np.float64):
        P = _w(dt)
        cols = {1, 2, 3, 7, 31, 32, 33, 4 * P - 1, 4 * P, 4 * P + 1, 1023, 1024, 1025}
        if dt == np.float64:
            cols |= {511, 512, 513}
        for C in sorted(cols):
            for cell in ROW_CELLS:
                ci = (C in (4 * P - 1, 4 * P + 1, 1025) and cell in ("softmax", "layernorm")) or \
                     (C == 33 and cell == "std")
                out.append(BCase(f"row-{cell}-{_name(dt)}-{C}", "row", "warp/pack/aligned packs",
                                 ROW_CELLS[cell], _row_arrays(dt, 5, C, C), Template.ROW, ROW_TIERS, ci=ci))
        # rows of views: offsets make the row cache read through strides
        out.append(BCase(f"row-view-{_name(dt)}", "row", "rows of a view with an offset",
                         "v = x[1:, 1:]\nm = v.max(-1, keepdims=True)\ne = np.exp(v - m)\ny = e / e.sum(-1, keepdims=True)",
                         {"x": _data(dt, (6, 4 * P + 2), 11)}, Template.ROW, ROW_TIERS, ci=dt == np.float16))
    for dt, C in ((np.float32, 16384), (np.float32, 16385), (np.float16, 16385), (np.float32, 51197),
                  (np.float32, 51200), (np.float32, 51201), (np.float64, 25601)):
        for cell in ("softmax", "two"):
            out.append(BCase(f"row-long-{cell}-{_name(dt)}-{C}", "row", "REG_ELEMS block tier, SMEM_LIMIT",
                             ROW_CELLS[cell], _row_arrays(dt, 2, C, C), Template.ROW, ROW_TIERS))
    return out


STRIDED_CELLS = {
    "softmax": "m = x.max(1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(1, keepdims=True)",
    "center": "y = (x - x.mean(1, keepdims=True)) * g\ni = x.argmax(1)",
}


def strided_row_cases() -> list[BCase]:
    out: list[BCase] = []
    for dt in (np.float16, np.float32, np.float64):
        for S in (2, 3, 7, 9, 31, 32, 33):
            for C in (5, 26, 27, 63, 64, 65):
                if S * C > 2200 or (C in (26, 27) and S != 3) or (C == 63 and S != 32):
                    continue
                for cell in STRIDED_CELLS:
                    arrays = {"x": _data(dt, (2, C, S), S * C), "g": _data(dt, (1, C, S), S)}
                    out.append(BCase(f"srow-{cell}-{_name(dt)}-{C}x{S}", "strided-row",
                                     "WARP_ELEMS_MAX 64, staged S < 32, slabs cols*min(S,32) >= 2048",
                                     STRIDED_CELLS[cell], arrays, Template.ROW, STRIDED_TIERS,
                                     ci=(C, S) in ((64, 3), (65, 32)) and dt != np.float64))
    return out


# Random cells at threshold sizes: a view (offset, reversed, strided, transposed) of a
# 2-D or 3-D input, then a template's op along some axis.
SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025)
VIEWS = ("x", "x[1:]", "x[:, 1:]", "x[::-1]", "x[:, ::-1]", "x.T", "x[:, ::2]", "x[1:, 3:]", "x[::-1, 1:]",
         "x.T[::-1]", "x.T[:, 1:]")
OPS = {
    "pw": ("y = {v} * 2 + 1", None),
    "pw2": ("y = {v} + x2", None),
    "sum": ("s = {v}.sum({a})\nm = {v}.max({a})", Template.REDUCTION),
    "arg": ("i = {v}.argmax({a})\nj = {v}.argmin({a})", Template.REDUCTION),
    "var": ("v = {v}.var({a})\ns = {v}.std({a})", Template.REDUCTION),
    "center": ("y = {v} - {v}.mean({a}, keepdims=True)", Template.ROW),
    "softmax": ("e = np.exp({v} - {v}.max({a}, keepdims=True))\ny = e / e.sum({a}, keepdims=True)", Template.ROW),
}


def random_cases(count: int = 400, seed: int = 2026) -> list[BCase]:
    rng = np.random.default_rng(seed)
    out: list[BCase] = []
    dtypes = (np.bool_, np.int8, np.int16, np.int32, np.float16, np.float32, np.float64)
    while len(out) < count:
        dt = dtypes[int(rng.integers(len(dtypes)))]
        op = list(OPS)[int(rng.integers(len(OPS)))]
        if np.dtype(dt).kind != "f" and op in ("var", "center", "softmax"):
            continue
        if np.dtype(dt).kind == "b" and op in ("pw", "pw2", "sum"):
            continue
        view = VIEWS[int(rng.integers(len(VIEWS)))]
        three = rng.random() < 0.25
        dims = [int(SIZES[int(rng.integers(len(SIZES)))]) + (4 if "3:" in view else 1) for _ in range(3 if three else 2)]
        if three:
            dims[int(rng.integers(3))] = int(rng.integers(2, 6))
        if int(np.prod(dims)) > 24000 or min(dims) < 1:
            continue
        x = _data(dt, tuple(dims), len(out), 2.0)
        try:
            v = eval(view, {"x": x})
        except Exception:  # noqa: BLE001
            continue
        if v.size == 0:
            continue
        a = int(rng.integers(-1, v.ndim))
        src, template = OPS[op]
        src = src.format(v=view, a=f"axis={a}" if op not in ("pw", "pw2") else "")
        arrays = {"x": x}
        if op == "pw2":
            arrays["x2"] = _data(dt, v.shape[-1:] if rng.random() < 0.5 else v.shape, len(out) + 1)
        tiers = (ROW_TIERS if a in (-1, v.ndim - 1) else STRIDED_TIERS) if template is Template.ROW else ()
        out.append(BCase(f"rand-{len(out)}-{op}-{_name(dt)}-{'x'.join(map(str, dims))}-{view}-{a}", "random",
                         "random threshold sizes and views", src, arrays, template or Template.POINTWISE, tiers,
                         ci=len(out) % 25 == 0, rtol=_rtol_red(dt) if template else None))
    return out


FAMILIES: dict[str, Callable[[], list[BCase]]] = {
    "pointwise": pointwise_cases, "transpose": transpose_cases, "row-vector": row_path_cases,
    "inner": inner_reduction_cases, "column": column_reduction_cases, "row": row_cases,
    "strided-row": strided_row_cases, "random": random_cases,
}


def all_cases() -> list[BCase]:
    out = [c for make in FAMILIES.values() for c in make()]
    seen: set[str] = set()
    for c in out:
        assert c.id not in seen, c.id
        seen.add(c.id)
    return out


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

# The emulator reports misaligned vector loads (__ldg); a GPU faults on misaligned vector
# stores as well: the host prelude's fl_store_vec records them the same way.
_STORE = "    *reinterpret_cast<R*>(p) = u.raw;\n}"
_CHECKED_STORE = ("    if (reinterpret_cast<std::uintptr_t>(p) % sizeof(R) && !fl_host::misaligned)\n"
                  "        fl_host::misaligned = reinterpret_cast<const void*>(p), fl_host::misaligned_bytes = sizeof(R);\n"
                  "    *reinterpret_cast<R*>(p) = u.raw;\n}")


@contextlib.contextmanager
def checked_stores(sanitize: bool = False):
    """HostRunner builds within this block check vector stores' alignment (and, with
    `sanitize`, every typed access's, shared memory included: g++'s alignment sanitizer,
    whose reports go to stderr)."""
    plain_prelude, plain_flags = cuda_host.host_prelude, list(cuda_host._FLAGS)

    def prelude() -> str:
        text = plain_prelude()
        assert _STORE in text, "fl_store_vec changed: update boundary_shapes._STORE"
        return text.replace(_STORE, _CHECKED_STORE, 1)
    cuda_host.host_prelude = prelude
    if sanitize:
        cuda_host._FLAGS[:] = plain_flags + ["-fsanitize=alignment"]
    try:
        yield
    finally:
        cuda_host.host_prelude = plain_prelude
        cuda_host._FLAGS[:] = plain_flags


_PAGE = 4096


def _guarded_empty(shape, dtype, at: str) -> np.ndarray:
    """An array whose first byte starts a page after an inaccessible one (at="start") or
    whose end is within 15 bytes of one (at="end", start 16-byte aligned): a kernel that
    reads outside its arrays faults (the process dies with SIGSEGV) where a GPU's read
    might go unnoticed or fault on another allocation."""
    import ctypes
    import mmap
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    pages = -(-max(n, 1) // _PAGE) + 1
    mm = mmap.mmap(-1, pages * _PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    libc = ctypes.CDLL(None)
    guard = base if at == "start" else base + (pages - 1) * _PAGE
    assert libc.mprotect(ctypes.c_void_p(guard), _PAGE, 0) == 0
    # (the array holds the mapping through its buffer: unmapped when the last view goes)
    start = _PAGE if at == "start" else ((pages - 1) * _PAGE - n) // 16 * 16
    return np.frombuffer(mm, np.uint8, count=n, offset=start).view(dt).reshape(shape)


@contextlib.contextmanager
def guarded_arrays(at: str):
    """The emulator's arrays (inputs, outputs, intermediates) next to guard pages."""
    plain_empty, plain_aligned = cuda_host._aligned_empty, cuda_host._aligned

    def aligned(a: np.ndarray) -> np.ndarray:
        out = _guarded_empty(a.shape, a.dtype, at)
        out[...] = a
        return out
    cuda_host._aligned_empty = lambda shape, dtype: _guarded_empty(shape, dtype, at)
    cuda_host._aligned = aligned
    try:
        yield
    finally:
        cuda_host._aligned_empty, cuda_host._aligned = plain_empty, plain_aligned


@contextlib.contextmanager
def captured_stderr():
    """The process's fd 2 into a file for the block; yields a list that gets its text."""
    box: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            yield box
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            box.append(f.read().decode(errors="replace"))


@dataclass
class Variant:
    case: BCase
    label: str
    plan: Plan
    codes: tuple


@dataclass
class Report:
    runs: int = 0
    variants: int = 0
    failures: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)


MAX_BUDGETS = replace(DEFAULT_BUDGETS, min_strided_rows=2)


def plans_of(case: BCase, graph) -> list[tuple[str, Plan]]:
    plans = [("auto", make_plan(graph, "auto")), ("max", make_plan(graph, "max", budgets=MAX_BUDGETS))]
    if case.template is not None:
        forced = one_kernel(graph, case.template)
        if all(k.space is not None for k in forced.kernels):
            plans.append((f"one-{case.template.value}", forced))
    out, seen = [], set()
    for label, p in plans:
        key = tuple((k.template, tuple(sorted(k.nodes))) for k in p.kernels)
        if key not in seen:
            seen.add(key)
            out.append((label, p))
    return out


def variants_of(case: BCase, candidates: bool = True) -> tuple[list[Variant], list[str]]:
    """Every (plan, configuration) of the case: the heuristic's, each launch candidate of
    each kernel, each forced row tier; and the failures to trace, plan or generate."""
    ns = {"np": np, **case.arrays}
    errors: list[str] = []
    try:
        traced = fuselab.trace_cell(case.source, ns)
    except Exception as e:  # noqa: BLE001 - a NumPy cell must trace
        return [], [f"{case.id}: trace: {type(e).__name__}: {e}"]
    out: list[Variant] = []
    seen: set[tuple[str, ...]] = set()

    def add(label: str, plan: Plan, make) -> None:
        try:
            codes = make()
        except Exception as e:  # noqa: BLE001
            errors.append(f"{case.id} [{label}]: codegen: {type(e).__name__}: {e}")
            return
        key = tuple(c.source if isinstance(c, KernelCode) else repr(c) for c in codes)
        if key not in seen:
            seen.add(key)
            out.append(Variant(case, label, plan, codes))

    try:
        plans = plans_of(case, traced.graph)
    except Exception as e:  # noqa: BLE001
        return [], [f"{case.id}: plan: {type(e).__name__}: {e}"]
    for label, plan in plans:
        add(label, plan, lambda: generate(plan, EMULATED))
        if not candidates:
            continue
        for k, kern in enumerate(plan.kernels):
            cands = launch_candidates(plan, k, EMULATED)
            for j, cfg in enumerate(cands[1:], 1):
                add(f"{label} k{k} cand {cfg.label()}", plan, lambda cfg=cfg, k=k: generate(plan, EMULATED, {k: cfg}))
            if kern.template is Template.ROW:
                # a block a row: forced on thousands of short rows, the emulator's threads
                # take minutes for no threshold's sake
                many = kern.space is not None and kern.space.rows > 256
                for tier in case.tiers:
                    if many and tier in ("block", "smem", "looped"):
                        continue
                    opts = replace(EMULATED, row_tier=tier)
                    add(f"{label} row_tier={tier}", plan, lambda opts=opts: generate(plan, opts))
    return out, errors


def nvrtc_check(variants: list[Variant], report: Report) -> None:
    """NVRTC takes every kernel (the emulator's g++ accepts C++ that NVRTC refuses)."""
    from codegen_util import nvrtc_refusals
    owner = {c.source: v for v in variants for c in v.codes if isinstance(c, KernelCode)}
    kernels = [c for v in variants for c in v.codes if isinstance(c, KernelCode)]
    for code, err in nvrtc_refusals(kernels):
        v = owner[code.source]
        report.failures.append(f"{v.case.id} [{v.label}]: NVRTC refuses {code.name}: {str(err)[:800]}")


def run_variants(variants: list[Variant], report: Report, sanitize: bool = False, nvrtc: bool = False) -> None:
    if not variants:
        return
    if nvrtc:
        nvrtc_check(variants, report)
    with checked_stores(sanitize):
        runner = HostRunner([], generated=[(v.plan, v.codes) for v in variants])
    guard = os.environ.get("BOUNDARY_GUARD")   # "start" / "end": arrays next to guard pages
    with guarded_arrays(guard) if guard else contextlib.nullcontext():
        _run_all(runner, variants, report, sanitize)


def _run_all(runner: HostRunner, variants: list[Variant], report: Report, sanitize: bool) -> None:
    wants: dict[str, dict] = {}
    for v in variants:
        case = v.case
        ns = {"np": np, **case.arrays}
        inputs = {n: ns[n] for n in v.plan.graph.input_names()}
        if case.id not in wants:
            wants[case.id] = run_graph(v.plan.graph, inputs)
        want = wants[case.id]
        report.variants += 1
        try:
            if sanitize:
                with captured_stderr() as err:
                    got = runner.run_codes(v.plan, v.codes, inputs)
                if "runtime error" in err[0]:
                    raise EmulatorError(f"sanitizer: {err[0].strip()[:600]}")
            else:
                t0 = time.perf_counter()
                got = runner.run_codes(v.plan, v.codes, inputs)
                if time.perf_counter() - t0 > 20:
                    report.slow.append(f"{case.id} [{v.label}]: {time.perf_counter() - t0:.0f} s")
        except Exception as e:  # noqa: BLE001
            report.failures.append(f"{case.id} [{v.label}]: {type(e).__name__}: {e}")
            continue
        report.runs += 1
        if any(isinstance(c, KernelCode) and c.scratch_bytes for c in v.codes):
            # split reductions leave their counters and partials ready for the next launch
            try:
                again = runner.run_codes(v.plan, v.codes, inputs)
            except Exception as e:  # noqa: BLE001
                report.failures.append(f"{case.id} [{v.label}] second launch: {type(e).__name__}: {e}")
                continue
            for name in got:
                if not np.array_equal(again[name], got[name], equal_nan=again[name].dtype.kind in "fc"):
                    report.failures.append(f"{case.id} [{v.label}] second launch differs in {name}")
        rtol = case.rtol if case.rtol is not None else {k: r for k, r in RTOL.items()}
        check = compare(got, want, rtol)
        if not check.ok:
            names = [k.name for k in v.plan.kernels]
            report.failures.append(f"{case.id} [{v.label}] kernels {names}: {check.worst}")


def run_cases(cases: Iterable[BCase], candidates: bool = True, batch: int = 60, sanitize: bool = False,
              progress: Callable[[str], None] | None = None, nvrtc: bool = False) -> Report:
    report = Report()
    pending: list[Variant] = []
    for case in cases:
        vs, errs = variants_of(case, candidates)
        report.failures += errs
        pending += vs
        if len(pending) >= batch:
            run_variants(pending, report, sanitize, nvrtc)
            if progress:
                progress(f"{report.variants} variants, {len(report.failures)} failures (at {case.id})")
            pending = []
    run_variants(pending, report, sanitize, nvrtc)
    return report


def ci_cases() -> list[BCase]:
    return [c for c in all_cases() if c.ci]


if __name__ == "__main__":   # python boundary_shapes.py [family-regex] (from tests/)
    import sys
    pattern = re.compile(sys.argv[1] if len(sys.argv) > 1 else ".")
    sanitize = os.environ.get("BOUNDARY_SANITIZE") == "1"
    nvrtc = os.environ.get("BOUNDARY_NVRTC") == "1"
    chosen = [c for c in all_cases() if pattern.search(c.id)]
    t0 = time.time()
    print(f"{len(chosen)} cases", flush=True)
    rep = run_cases(chosen, sanitize=sanitize, nvrtc=nvrtc, progress=lambda s: print(f"[{time.time() - t0:.0f}s] {s}", flush=True))
    print(f"{len(chosen)} cases, {rep.variants} variants run, {rep.runs} completed, {len(rep.failures)} failures "
          f"in {time.time() - t0:.0f}s")
    for f in rep.failures:
        print("FAIL", f[:2000])
    for f in rep.slow:
        print("SLOW", f)
