"""The shape sweep's cases: families of notebook cells across the sizes a notebook meets,
each written as a cell (what a `%%fuse` user writes) and as the same computation for
torch.compile. float32 unless the family says otherwise; most cases move 128-256 MiB so
that bandwidth, not launch overhead, decides (the launch-bound family is the exception).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

N = 1 << 26   # elements of the large cases (256 MiB of float32)


@dataclass(frozen=True)
class Case:
    family: str
    size: str                                  # the size axis of the heat map
    source: str                                # the cell
    inputs: dict[str, tuple[tuple[int, ...], str]]   # name -> (shape, dtype)
    torch_fn: Callable[..., Any]               # same computation on torch tensors (inputs in order)
    outputs: tuple[str, ...] = ("y",)
    kind: str = "memory"                       # memory | launch

    @property
    def name(self) -> str:
        return f"{self.family} {self.size}"


def _softmax(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


SOFTMAX = "m = x.max(axis=-1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=-1, keepdims=True)"
LAYERNORM = ("mu = x.mean(axis=-1, keepdims=True)\nxc = x - mu\nvar = (xc * xc).mean(axis=-1, keepdims=True)\n"
             "y = xc / np.sqrt(var + 1e-5) * g + b")
LOGSUMEXP = "m = x.max(axis=-1, keepdims=True)\ny = np.log(np.exp(x - m).sum(axis=-1)) + m[:, 0]"


def _layernorm(x, g, b):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    return xc / (var + 1e-5).sqrt() * g + b


def _logsumexp(x):
    m = x.amax(-1, keepdim=True)
    return (x - m).exp().sum(-1).log() + m[:, 0]


def _stencil2(x):
    return 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]


def _stencil3(x):
    return (6 * x[1:-1, 1:-1, 1:-1] - x[:-2, 1:-1, 1:-1] - x[2:, 1:-1, 1:-1] - x[1:-1, :-2, 1:-1]
            - x[1:-1, 2:, 1:-1] - x[1:-1, 1:-1, :-2] - x[1:-1, 1:-1, 2:])


def _fmt(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def cases() -> list[Case]:
    out: list[Case] = []
    for dt, widths in (("float32", (8, 32, 128, 512, 1024, 2048, 4096, 8192, 32768, 131072)),
                       ("float16", (32, 128, 1024, 4096, 32768))):
        for w in widths:
            out.append(Case(f"softmax {dt}", _fmt(w), SOFTMAX, {"x": ((N // w, w), dt)}, _softmax))
    for dt, widths in (("float32", (128, 1024, 4096, 16384)), ("float16", (1024, 4096))):
        for w in widths:
            out.append(Case(f"layernorm {dt}", _fmt(w), LAYERNORM,
                            {"x": ((N // w, w), dt), "g": ((w,), dt), "b": ((w,), dt)}, _layernorm))
    for w in (64, 1024, 8192):
        out.append(Case("logsumexp float32", _fmt(w), LOGSUMEXP, {"x": ((N // w, w), "float32")}, _logsumexp))
    for w in (8, 64, 1024, 16384, 131072):
        out.append(Case("row sum", _fmt(w), "y = x.sum(axis=1)", {"x": ((N // w, w), "float32")},
                        lambda x: x.sum(1)))
    for c in (1, 4, 16, 64, 256, 1024, 4096, 65536):
        out.append(Case("column sum", _fmt(c), "y = x.sum(axis=0)", {"x": ((N // c, c), "float32")},
                        lambda x: x.sum(0)))
    out += [
        Case("middle axis", "(262144,4,64) mean 1", "y = x.mean(axis=1)", {"x": ((262144, 4, 64), "float32")},
             lambda x: x.mean(1)),
        Case("middle axis", "(64,4096,256) sum 1", "y = x.sum(axis=1)", {"x": ((64, 4096, 256), "float32")},
             lambda x: x.sum(1)),
        Case("middle axis", "(16,64,256,256) sum 1,2", "y = x.sum(axis=(1, 2))",
             {"x": ((16, 64, 256, 256), "float32")}, lambda x: x.sum((1, 2))),
        Case("middle axis", "(1024,256,256) sum 0", "y = x.sum(axis=0)", {"x": ((1024, 256, 256), "float32")},
             lambda x: x.sum(0)),
    ]
    out += [
        Case("var/std", "var axis 0 (16384,4096)", "y = x.var(axis=0)", {"x": ((16384, 4096), "float32")},
             lambda x: x.var(0, unbiased=False)),
        Case("var/std", "var axis 1 (4096,16384)", "y = x.var(axis=1)", {"x": ((4096, 16384), "float32")},
             lambda x: x.var(1, unbiased=False)),
        Case("var/std", "std axis 0 (65536,1024)", "y = x.std(axis=0)", {"x": ((65536, 1024), "float32")},
             lambda x: x.std(0, unbiased=False)),
        Case("var/std", "var axes 0,2 (256,256,1024)", "y = x.var(axis=(0, 2))", {"x": ((256, 256, 1024), "float32")},
             lambda x: x.var((0, 2), unbiased=False)),
    ]
    out += [
        Case("stencil", "1-D 5-point", "y = (x[:-4] + x[1:-3] + x[2:-2] + x[3:-1] + x[4:]) * 0.2",
             {"x": ((N,), "float32")}, lambda x: (x[:-4] + x[1:-3] + x[2:-2] + x[3:-1] + x[4:]) * 0.2),
        Case("stencil", "2-D 5-point", "y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]",
             {"x": ((8192, 8192), "float32")}, _stencil2),
        Case("stencil", "3-D 7-point",
             "y = (6 * x[1:-1, 1:-1, 1:-1] - x[:-2, 1:-1, 1:-1] - x[2:, 1:-1, 1:-1] - x[1:-1, :-2, 1:-1]\n"
             "     - x[1:-1, 2:, 1:-1] - x[1:-1, 1:-1, :-2] - x[1:-1, 1:-1, 2:])",
             {"x": ((512, 512, 256), "float32")}, _stencil3),
    ]
    out += [
        Case("two-pass", "x / x.sum()", "y = x / x.sum()", {"x": ((N,), "float32")}, lambda x: x / x.sum()),
        Case("two-pass", "x - x.mean(0)", "y = x - x.mean(axis=0)", {"x": ((16384, 4096), "float32")},
             lambda x: x - x.mean(0)),
        Case("two-pass", "standardize axis 0", "y = (x - x.mean(axis=0)) / x.std(axis=0)",
             {"x": ((16384, 4096), "float32")}, lambda x: (x - x.mean(0)) / x.std(0, unbiased=False)),
    ]
    out += [
        Case("broadcast", "rows (8192,8192)", "y = x * a[:, None] + b", {"x": ((8192, 8192), "float32"),
             "a": ((8192,), "float32"), "b": ((8192,), "float32")}, lambda x, a, b: x * a[:, None] + b),
        Case("broadcast", "middle (256,1024,256)", "y = x * w[None, :, None] + 1.0",
             {"x": ((256, 1024, 256), "float32"), "w": ((1024,), "float32")}, lambda x, w: x * w[None, :, None] + 1.0),
        Case("broadcast", "leading (1024,256,256)", "y = np.maximum(x - w, 0.0)",
             {"x": ((1024, 256, 256), "float32"), "w": ((256, 256), "float32")}, lambda x, w: (x - w).clamp_min(0.0)),
        Case("broadcast", "float16 chain", "y = np.tanh(x * 0.5) * x + 1.0", {"x": ((N,), "float16")},
             lambda x: (x * 0.5).tanh() * x + 1.0),
    ]
    for n in (1024, 65536):
        out.append(Case("launch-bound", f"softmax {_fmt(n)}", SOFTMAX, {"x": ((n // 64, 64), "float32")}, _softmax,
                        kind="launch"))
        out.append(Case("launch-bound", f"chain {_fmt(n)}", "y = np.exp(-x * x) * 2.0 + x",
                        {"x": ((n,), "float32")}, lambda x: (-x * x).exp() * 2.0 + x, kind="launch"))
    return out


def _colsoftmax(x):
    e = (x - x.amax(0, keepdim=True)).exp()
    return e / e.sum(0, keepdim=True)


def _midsoftmax(x):
    e = (x - x.amax(1, keepdim=True)).exp()
    return e / e.sum(1, keepdim=True)


def wide_cases() -> list[Case]:
    """Cells and shapes the tuned families leave out (`sweep.py --wide`): odd widths,
    softmax along other axes, transposed and strided views, integer and float64 data,
    argmax, masks, outer products, full reductions, odd stencils, small cells. Where one
    runs slow against torch.compile, the cause is looked for in its template, not fixed
    for the shape."""
    f32 = "float32"
    out = [Case("odd softmax", _fmt(w), SOFTMAX, {"x": ((N // w // 8 * 8, w), f32)}, _softmax)
           for w in (3, 100, 1000, 3000, 50000)]
    out += [Case("odd layernorm", _fmt(w), LAYERNORM, {"x": ((N // w // 8 * 8, w), f32), "g": ((w,), f32),
                                                        "b": ((w,), f32)}, _layernorm) for w in (768, 5000)]
    out += [
        Case("softmax axis", "axis 0 (4096,16384)",
             "m = x.max(axis=0, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=0, keepdims=True)",
             {"x": ((4096, 16384), f32)}, _colsoftmax),
        Case("softmax axis", "axis 0 (65536,1024)",
             "m = x.max(axis=0, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=0, keepdims=True)",
             {"x": ((65536, 1024), f32)}, _colsoftmax),
        Case("softmax axis", "axis 1 (64,1024,256)",
             "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)",
             {"x": ((64, 1024, 256), f32)}, _midsoftmax),
        Case("views", "x.T * 2 + z (8192,8192)", "y = x.T * 2 + z", {"x": ((8192, 8192), f32), "z": ((8192, 8192), f32)},
             lambda x, z: x.t() * 2 + z),
        Case("views", "x[:, ::2].sum(1)", "y = x[:, ::2].sum(axis=1)", {"x": ((16384, 4096), f32)},
             lambda x: x[:, ::2].sum(1)),
        Case("views", "x[::-1] + x", "y = x[::-1] + x", {"x": ((N,), f32)}, lambda x: x.flip(0) + x),
        Case("views", "x.T.mean(1) (4096,16384)", "y = x.T.mean(axis=1)", {"x": ((4096, 16384), f32)},
             lambda x: x.t().mean(1)),
        Case("dtypes", "int32 row sum", "y = x.sum(axis=1)", {"x": ((16384, 4096), "int32")}, lambda x: x.sum(1)),
        Case("dtypes", "float16 column sum", "y = x.sum(axis=0)", {"x": ((16384, 4096), "float16")},
             lambda x: x.sum(0)),
        Case("dtypes", "float64 chain", "y = np.exp(-x * x) * 2.0 + x", {"x": ((N // 2,), "float64")},
             lambda x: (-x * x).exp() * 2.0 + x),
        Case("dtypes", "int8 to float32", "y = x.astype(np.float32) * 0.5 + 1.0", {"x": ((N,), "int8")},
             lambda x: x.float() * 0.5 + 1.0),
        Case("other", "argmax rows", "y = x.argmax(axis=1)", {"x": ((16384, 4096), f32)}, lambda x: x.argmax(1)),
        Case("other", "mask count rows", "y = (x > 0).sum(axis=1)", {"x": ((16384, 4096), f32)},
             lambda x: (x > 0).sum(1)),
        Case("other", "sum over (1,3) 4-D", "y = x.sum(axis=(1, 3))", {"x": ((64, 64, 128, 128), f32)},
             lambda x: x.sum((1, 3))),
        Case("other", "mean of rows of 7", "y = x.mean(axis=1)", {"x": ((N // 8, 7), f32)}, lambda x: x.mean(1)),
        Case("other", "outer product", "y = a[:, None] * b[None, :]", {"a": ((8192,), f32), "b": ((8192,), f32)},
             lambda a, b: a[:, None] * b[None, :]),
        Case("other", "leaky clip", "y = np.where(x > 0, x, 0.01 * x).clip(-1, 1)", {"x": ((N,), f32)},
             lambda x: torch_where(x > 0, x, 0.01 * x).clamp(-1, 1)),
        Case("other", "sum of squares", "y = (x * x).sum()", {"x": ((N,), f32)}, lambda x: (x * x).sum()),
        Case("other", "x + row mean", "y = x + x.mean(axis=1, keepdims=True)", {"x": ((262144, 256), f32)},
             lambda x: x + x.mean(1, keepdim=True)),
        Case("odd stencil", "2-D (5000,7000)",
             "y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]",
             {"x": ((5000, 7000), f32)}, _stencil2),
        Case("odd stencil", "3-D (300,300,300)",
             "y = (6 * x[1:-1, 1:-1, 1:-1] - x[:-2, 1:-1, 1:-1] - x[2:, 1:-1, 1:-1] - x[1:-1, :-2, 1:-1]\n"
             "     - x[1:-1, 2:, 1:-1] - x[1:-1, 1:-1, :-2] - x[1:-1, 1:-1, 2:])",
             {"x": ((300, 300, 300), f32)}, _stencil3),
        Case("small", "softmax (256,1000)", SOFTMAX, {"x": ((256, 1000), f32)}, _softmax, kind="launch"),
        Case("small", "layernorm (64,768)", LAYERNORM, {"x": ((64, 768), f32), "g": ((768,), f32),
                                                         "b": ((768,), f32)}, _layernorm, kind="launch"),
        Case("small", "chain 10000", "y = np.exp(-x * x) * 2.0 + x", {"x": ((10000,), f32)},
             lambda x: (-x * x).exp() * 2.0 + x, kind="launch"),
    ]
    return out + strided_row_cases()


def strided_row_cases() -> list[Case]:
    """Reductions along a non-last axis used back at full shape (`--only "strided rows"`):
    one row kernel a thread per row, a block per slab of rows (96-256 columns, more than a
    thread's registers hold), or a column reduction and a pointwise kernel (1024)."""
    out = []
    for dt, counts in (("float32", (2, 4, 8, 16, 32, 64, 96, 128, 256, 1024)), ("float16", (2, 16, 256))):
        for r in counts:
            out.append(Case(f"strided rows {dt}", f"x - x.mean(0) ({r},{_fmt(N // r)})", "y = x - x.mean(axis=0)",
                            {"x": ((r, N // r), dt)}, lambda x: x - x.mean(0)))
    for r in (8, 64, 256):
        out.append(Case("strided rows float32", f"standardize axis 0 ({r},{_fmt(N // r)})",
                        "y = (x - x.mean(axis=0)) / x.std(axis=0)", {"x": ((r, N // r), "float32")},
                        lambda x: (x - x.mean(0)) / x.std(0, unbiased=False)))
    for dt, shape in (("float32", (64, 16, 65536)), ("float32", (256, 8, 32768)), ("float16", (1251, 4736, 17))):
        out.append(Case(f"strided rows {dt}", f"softmax axis 1 {str(shape).replace(' ', '')}",
                        "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)",
                        {"x": (shape, dt)}, _midsoftmax))
    for r in (32, 256):
        out.append(Case("strided rows float32", f"softmax axis 0 ({r},{_fmt(N // r)})",
                        "m = x.max(axis=0, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=0, keepdims=True)",
                        {"x": ((r, N // r), "float32")}, _colsoftmax))
    return out + slab_row_cases()


def slab_row_cases() -> list[Case]:
    """Strided rows a block per slab of adjacent rows (`--only "slab rows"`): too few rows
    for a thread each, or so few adjacent ones (under 32) that a warp's loads straddle
    slabs."""
    out = []
    mid = "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)"
    for dt, shape in (("float32", (4096, 1024, 16)), ("float16", (512, 16384, 8)), ("float32", (626, 4736, 17)),
                      ("float32", (8192, 2048, 3)), ("float16", (2048, 1000, 33))):
        out.append(Case(f"slab rows {dt}", f"softmax axis 1 {str(shape).replace(' ', '')}", mid,
                        {"x": (shape, dt)}, _midsoftmax))
    out.append(Case("slab rows float32", "standardize axis 1 (2048,4096,8)",
                    "y = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)",
                    {"x": ((2048, 4096, 8), "float32")},
                    lambda x: (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True, unbiased=False)))
    out.append(Case("slab rows float32", "x - x.mean(0) (8192,8192)", "y = x - x.mean(axis=0)",
                    {"x": ((8192, 8192), "float32")}, lambda x: x - x.mean(0)))
    return out


def torch_where(c, a, b):
    import torch
    return torch.where(c, a, b)


def make_inputs(case: Case, xp: Any, seed: int = 0) -> dict[str, Any]:
    """Normal random inputs, drawn by `xp` itself (on the device for CuPy)."""
    rng = xp.random.default_rng(seed)
    return {name: rng.standard_normal(shape, dtype=np.float32).astype(dt)
            for name, (shape, dt) in case.inputs.items()}


# ---------------------------------------------------------------------------
# Random shapes (`sweep.py --random N --seed S`): the same families at shapes nobody
# tuned for, drawn afresh per seed
# ---------------------------------------------------------------------------

def _log_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An integer log-uniform in [lo, hi]: small and large sizes equally often."""
    return int(round(float(np.exp(rng.uniform(np.log(lo), np.log(hi))))))


def _split(rng: np.random.Generator, total: int, dims: int, lo: int = 2) -> tuple[int, ...]:
    """A random shape of `dims` axes with about `total` elements, none below `lo`."""
    cuts = np.sort(rng.uniform(0, 1, dims - 1))
    fracs = np.diff(np.concatenate([[0.0], cuts, [1.0]]))
    return tuple(max(lo, int(round(total ** f))) for f in fracs)


FIRST_FAMILIES = ("softmax", "layernorm", "logsumexp", "row reduce", "column reduce", "3-D reduce", "var/std",
                  "two-pass", "broadcast", "stencil 2-D", "stencil 3-D", "chain", "small", "4-D reduce",
                  "axis softmax", "norm", "leaky sum", "strided", "transposed", "int reduce", "moments")


def _random_case(rng: np.random.Generator, tag: str, family: str | None = None) -> Case:
    """A case of random dtype and shape, of a random first family unless `family` is given."""
    dt = str(rng.choice(["float32"] * 5 + ["float16"] * 2 + ["float64"]))
    itemsize = np.dtype(dt).itemsize
    nbytes = _log_int(rng, 1 << 21, 1 << 28)          # 2 MiB (in L2) to 256 MiB
    n = max(64, nbytes // itemsize)
    family = str(rng.choice(list(FIRST_FAMILIES))) if family is None else family
    if family in NEW_FAMILIES:
        return _everyday_case(rng, tag, family, dt, n)

    def case(fam: str, shape_txt: str, src: str, inputs: dict, fn, kind: str = "memory") -> Case:
        return Case(f"random {fam}", f"{tag} {shape_txt}", src, inputs, fn, kind=kind)

    if family in ("softmax", "layernorm", "logsumexp"):
        w = _log_int(rng, 2, 200_000 if family != "layernorm" else 65536)
        rows = max(1, n // w)
        if family == "softmax":
            return case(f"softmax {dt}", f"({rows},{w})", SOFTMAX, {"x": ((rows, w), dt)}, _softmax)
        if family == "layernorm":
            return case(f"layernorm {dt}", f"({rows},{w})", LAYERNORM,
                        {"x": ((rows, w), dt), "g": ((w,), dt), "b": ((w,), dt)}, _layernorm)
        return case(f"logsumexp {dt}", f"({rows},{w})", LOGSUMEXP, {"x": ((rows, w), dt)}, _logsumexp)
    if family in ("row reduce", "column reduce"):
        red = str(rng.choice(["sum", "mean", "max", "argmax"]))
        keep = _log_int(rng, 1, 1 << 17)              # rows kept (row reduce) or columns kept
        other = max(1, n // keep)
        shape, axis = ((keep, other), 1) if family == "row reduce" else ((other, keep), 0)
        tfn = {"sum": lambda x, a=axis: x.sum(a), "mean": lambda x, a=axis: x.mean(a),
               "max": lambda x, a=axis: x.amax(a), "argmax": lambda x, a=axis: x.argmax(a)}[red]
        return case(f"{family} {red} {dt}", str(shape).replace(" ", ""), f"y = x.{red}(axis={axis})",
                    {"x": (shape, dt)}, tfn)
    if family == "3-D reduce":
        shape = _split(rng, n, 3)
        axes = [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2)][int(rng.integers(6))]
        red = str(rng.choice(["sum", "mean"]))
        ax = axes[0] if len(axes) == 1 else axes
        tfn = (lambda x, a=axes: x.sum(a)) if red == "sum" else (lambda x, a=axes: x.mean(a))
        return case(f"3-D {red} {dt}", f"{str(shape).replace(' ', '')} axis {ax}", f"y = x.{red}(axis={ax})",
                    {"x": (shape, dt)}, tfn)
    if family == "var/std":
        shape = _split(rng, n, int(rng.integers(2, 4)))
        axis = int(rng.integers(len(shape)))
        red = str(rng.choice(["var", "std"]))
        tfn = (lambda x, a=axis: x.var(a, unbiased=False)) if red == "var" else (lambda x, a=axis: x.std(a, unbiased=False))
        return case(f"{red} {dt}", f"{str(shape).replace(' ', '')} axis {axis}", f"y = x.{red}(axis={axis})",
                    {"x": (shape, dt)}, tfn)
    if family == "two-pass":
        shape = _split(rng, n, 2)
        axis = int(rng.integers(2))
        if rng.uniform() < 0.5:
            return case(f"x - mean {dt}", f"{str(shape).replace(' ', '')} axis {axis}",
                        f"y = x - x.mean(axis={axis}, keepdims=True)", {"x": (shape, dt)},
                        lambda x, a=axis: x - x.mean(a, keepdim=True))
        return case(f"x / max {dt}", f"{str(shape).replace(' ', '')} axis {axis}",
                    f"y = x / np.abs(x).max(axis={axis}, keepdims=True)", {"x": (shape, dt)},
                    lambda x, a=axis: x / x.abs().amax(a, keepdim=True))
    if family == "broadcast":
        shape = _split(rng, n, int(rng.integers(2, 4)))
        axis = int(rng.integers(len(shape)))
        idx = ", ".join(":" if k == axis else "None" for k in range(len(shape)))
        return case(f"broadcast {dt}", f"{str(shape).replace(' ', '')} along {axis}",
                    f"y = np.maximum(x * w[{idx}] + 1.0, 0.0)", {"x": (shape, dt), "w": ((shape[axis],), dt)},
                    lambda x, w, a=axis, d=len(shape): (x * w.reshape([-1 if k == a else 1 for k in range(d)]) + 1.0
                                                       ).clamp_min(0.0))
    if family == "stencil 2-D":
        shape = _split(rng, n, 2, lo=8)
        return case(f"stencil 2-D {dt}", str(shape).replace(" ", ""),
                    "y = 4 * x[1:-1, 1:-1] - x[:-2, 1:-1] - x[2:, 1:-1] - x[1:-1, :-2] - x[1:-1, 2:]",
                    {"x": (shape, dt)}, _stencil2)
    if family == "stencil 3-D":
        shape = _split(rng, n, 3, lo=8)
        return case(f"stencil 3-D {dt}", str(shape).replace(" ", ""),
                    "y = (6 * x[1:-1, 1:-1, 1:-1] - x[:-2, 1:-1, 1:-1] - x[2:, 1:-1, 1:-1] - x[1:-1, :-2, 1:-1]\n"
                    "     - x[1:-1, 2:, 1:-1] - x[1:-1, 1:-1, :-2] - x[1:-1, 1:-1, 2:])", {"x": (shape, dt)}, _stencil3)
    if family == "chain":
        shape = _split(rng, n, int(rng.integers(1, 3)))
        return case(f"chain {dt}", str(shape).replace(" ", ""), "y = np.tanh(x * 0.5) * x + np.exp(-x * x)",
                    {"x": (shape, dt)}, lambda x: (x * 0.5).tanh() * x + (-x * x).exp())
    if family == "4-D reduce":
        shape = _split(rng, n, 4)
        k = int(rng.integers(1, 4))
        axes = tuple(sorted(int(a) for a in rng.choice(4, size=k, replace=False)))
        red = str(rng.choice(["sum", "mean", "max"]))
        ax = axes[0] if len(axes) == 1 else axes
        tfn = {"sum": lambda x, a=axes: x.sum(a), "mean": lambda x, a=axes: x.mean(a),
               "max": lambda x, a=axes: x.amax(a)}[red]
        return case(f"4-D {red} {dt}", f"{str(shape).replace(' ', '')} axis {ax}", f"y = x.{red}(axis={ax})",
                    {"x": (shape, dt)}, tfn)
    if family == "axis softmax":                      # softmax along any axis of a 3-D array
        shape = _split(rng, n, 3)
        axis = int(rng.integers(3))
        src = (f"m = x.max(axis={axis}, keepdims=True)\ne = np.exp(x - m)\n"
               f"y = e / e.sum(axis={axis}, keepdims=True)")
        return case(f"axis softmax {dt}", f"{str(shape).replace(' ', '')} axis {axis}", src, {"x": (shape, dt)},
                    lambda x, a=axis: (x - x.amax(a, keepdim=True)).exp()
                    / (x - x.amax(a, keepdim=True)).exp().sum(a, keepdim=True))
    if family == "norm":                              # x / ||x|| along any axis
        shape = _split(rng, n, int(rng.integers(2, 4)))
        axis = int(rng.integers(len(shape)))
        return case(f"norm {dt}", f"{str(shape).replace(' ', '')} axis {axis}",
                    f"y = x / np.sqrt((x * x).sum(axis={axis}, keepdims=True))", {"x": (shape, dt)},
                    lambda x, a=axis: x / (x * x).sum(a, keepdim=True).sqrt())
    if family == "leaky sum":                         # a where() feeding a reduction
        shape = _split(rng, n, 2)
        axis = int(rng.integers(2))
        return case(f"leaky sum {dt}", f"{str(shape).replace(' ', '')} axis {axis}",
                    f"y = np.where(x > 0, x, 0.01 * x).sum(axis={axis})", {"x": (shape, dt)},
                    lambda x, a=axis: torch_where(x > 0, x, 0.01 * x).sum(a))
    if family == "strided":                           # interleaved pairs, as complex data is stored
        rows, w = _split(rng, n // 2, 2)
        return case(f"strided {dt}", f"({rows},{2 * w})",
                    "y = x[:, ::2] * x[:, ::2] + x[:, 1::2] * x[:, 1::2]", {"x": ((rows, 2 * w), dt)},
                    lambda x: x[:, ::2] * x[:, ::2] + x[:, 1::2] * x[:, 1::2])
    if family == "transposed":                        # a transposed operand against a contiguous one
        a, b = _split(rng, n // 2, 2)
        return case(f"transposed {dt}", f"({a},{b})", "y = np.maximum(x.T, 0.0) * z",
                    {"x": ((a, b), dt), "z": ((b, a), dt)}, lambda x, z: x.t().clamp_min(0.0) * z)
    if family == "int reduce":
        it = str(rng.choice(["int32", "int8", "int64"]))
        shape = _split(rng, max(64, nbytes // np.dtype(it).itemsize), 2)
        axis = int(rng.integers(2))
        return case(f"int sum {it}", f"{str(shape).replace(' ', '')} axis {axis}", f"y = x.sum(axis={axis})",
                    {"x": (shape, it)}, lambda x, a=axis: x.sum(a))
    if family == "moments":                           # two reductions of one input, two outputs
        shape = _split(rng, n, 2)
        axis = int(rng.integers(2))
        return Case(f"random moments {dt}", f"{tag} {str(shape).replace(' ', '')} axis {axis}",
                    f"y = x.mean(axis={axis})\ns = x.std(axis={axis})", {"x": (shape, dt)},
                    lambda x, a=axis: (x.mean(a), x.std(a, unbiased=False)), outputs=("y", "s"))
    rows, w = _log_int(rng, 1, 512), _log_int(rng, 2, 2048)   # small: launch-bound
    return case(f"small softmax {dt}", f"({rows},{w})", SOFTMAX, {"x": ((rows, w), dt)}, _softmax, kind="launch")


# Everyday cells the first families left out (added 2026-12-03): statistics along any
# axis, batch-norm over several axes, broadcast reductions, full reductions, mixed dtypes.
NEW_FAMILIES = ("standardize", "rmsnorm", "pairwise", "full reduce", "outer", "mixed dtype",
                "count", "clip", "matvec", "batchnorm")


def _everyday_case(rng: np.random.Generator, tag: str, family: str, dt: str, n: int) -> Case:
    def case(fam: str, shape_txt: str, src: str, inputs: dict, fn, kind: str = "memory",
             outputs: tuple[str, ...] = ("y",)) -> Case:
        return Case(f"random {fam}", f"{tag} {shape_txt}", src, inputs, fn, kind=kind, outputs=outputs)

    def txt(shape: tuple[int, ...]) -> str:
        return str(shape).replace(" ", "")

    if family == "standardize":                     # z-scores along any axis of 2-D or 3-D data
        shape = _split(rng, n, int(rng.integers(2, 4)))
        axis = int(rng.integers(len(shape)))
        return case(f"standardize {dt}", f"{txt(shape)} axis {axis}",
                    f"y = (x - x.mean(axis={axis}, keepdims=True)) / x.std(axis={axis}, keepdims=True)",
                    {"x": (shape, dt)},
                    lambda x, a=axis: (x - x.mean(a, keepdim=True)) / x.std(a, keepdim=True, unbiased=False))
    if family == "rmsnorm":
        w = _log_int(rng, 2, 65536)
        rows = max(1, n // w)
        return case(f"rmsnorm {dt}", f"({rows},{w})",
                    "y = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g",
                    {"x": ((rows, w), dt), "g": ((w,), dt)},
                    lambda x, g: x / ((x * x).mean(-1, keepdim=True) + 1e-6).sqrt() * g)
    if family == "pairwise":                        # squared distances through a 3-D broadcast
        k = _log_int(rng, 2, 256)
        a, b = _split(rng, max(4, n // k), 2)
        return case(f"pairwise {dt}", f"({a},{k})x({b},{k})",
                    "d = ((p[:, None, :] - q[None, :, :]) ** 2).sum(axis=-1)",
                    {"p": ((a, k), dt), "q": ((b, k), dt)},
                    lambda p, q: ((p[:, None, :] - q[None, :, :]) ** 2).sum(-1), kind="compute", outputs=("d",))
    if family == "full reduce":
        shape = _split(rng, n, int(rng.integers(1, 4)))
        red = str(rng.choice(["sum", "max", "sumsq", "std"]))
        src = {"sum": "y = x.sum()", "max": "y = np.abs(x).max()", "sumsq": "y = (x * x).mean()",
               "std": "y = x.std()"}[red]
        tfn = {"sum": lambda x: x.sum(), "max": lambda x: x.abs().amax(), "sumsq": lambda x: (x * x).mean(),
               "std": lambda x: x.std(unbiased=False)}[red]
        return case(f"full {red} {dt}", txt(shape), src, {"x": (shape, dt)}, tfn)
    if family == "outer":                           # a kernel matrix from two vectors: write-bound
        a, b = _split(rng, n, 2)
        return case(f"outer {dt}", f"({a},{b})", "y = np.exp(-(u[:, None] - v[None, :]) ** 2)",
                    {"u": ((a,), dt), "v": ((b,), dt)}, lambda u, v: (-(u[:, None] - v[None, :]) ** 2).exp())
    if family == "mixed dtype":                     # half or int8 data, float32 scale and shift
        src_dt = str(rng.choice(["float16", "int8"]))
        rows, w = _split(rng, n, 2)
        return case(f"mixed {src_dt}->float32", f"({rows},{w})",
                    "y = x.astype(np.float32) * s + t", {"x": ((rows, w), src_dt), "s": ((w,), "float32"),
                                                         "t": ((w,), "float32")},
                    lambda x, s, t: x.float() * s + t)
    if family == "count":                           # boolean reductions along an axis
        shape = _split(rng, n, 2)
        axis = int(rng.integers(2))
        if rng.uniform() < 0.5:
            return case(f"count {dt}", f"{txt(shape)} axis {axis}", f"y = (x > 0.5).sum(axis={axis})",
                        {"x": (shape, dt)}, lambda x, a=axis: (x > 0.5).sum(a))
        return case(f"any {dt}", f"{txt(shape)} axis {axis}", f"y = np.any(np.abs(x) > 3.0, axis={axis})",
                    {"x": (shape, dt)}, lambda x, a=axis: (x.abs() > 3.0).any(a))
    if family == "clip":                            # scale, shift and clip along the last axis
        shape = _split(rng, n, int(rng.integers(1, 4)))
        w = shape[-1]
        return case(f"clip {dt}", txt(shape), "y = np.clip(x * s + 0.5, 0.0, 6.0)",
                    {"x": (shape, dt), "s": ((w,), dt)}, lambda x, s: (x * s + 0.5).clamp(0.0, 6.0))
    if family == "matvec":                          # a matrix-vector product written as a broadcast sum
        rows, w = _split(rng, n, 2)
        if rng.uniform() < 0.5:
            return case(f"matvec rows {dt}", f"({rows},{w})", "y = (x * v).sum(axis=1)",
                        {"x": ((rows, w), dt), "v": ((w,), dt)}, lambda x, v: (x * v).sum(1))
        return case(f"matvec columns {dt}", f"({rows},{w})", "y = (x * v[:, None]).sum(axis=0)",
                    {"x": ((rows, w), dt), "v": ((rows,), dt)}, lambda x, v: (x * v[:, None]).sum(0))
    # batch-norm over (N, C, H, W): statistics over axes (0, 2, 3), applied back
    shape = _split(rng, n, 4)
    return case(f"batchnorm {dt}", txt(shape),
                "mu = x.mean(axis=(0, 2, 3), keepdims=True)\nvar = x.var(axis=(0, 2, 3), keepdims=True)\n"
                "y = (x - mu) / np.sqrt(var + 1e-5)", {"x": (shape, dt)},
                lambda x: (x - x.mean((0, 2, 3), keepdim=True))
                / (x.var((0, 2, 3), keepdim=True, unbiased=False) + 1e-5).sqrt())


def random_cases(seed: int, count: int, families: tuple[str, ...] = ()) -> list[Case]:
    """`count` cases of random dtype and shape, the same for the same seed: of the first
    families (the stream earlier seeds' tables came from), or of `families`, chosen evenly."""
    unknown = [f for f in families if f not in FIRST_FAMILIES + NEW_FAMILIES]
    if unknown:
        raise ValueError(f"unknown sweep families {unknown}; choose from {list(FIRST_FAMILIES + NEW_FAMILIES)} "
                         "(or 'new' on the command line for NEW_FAMILIES)")
    rng = np.random.default_rng(seed)
    if not families:
        return [_random_case(rng, f"s{seed}.{k}") for k in range(count)]
    return [_random_case(rng, f"s{seed}.{k}", str(families[k % len(families)])) for k in range(count)]


def cases_named(names: list[str]) -> dict[str, Case]:
    """The cases these names (or sizes) can come from, by name: the fixed and wide lists,
    and the random cases of every seed they name ("random count float32 s21.7 (...)"),
    drawn from the first families and from the new ones (names are the same either way)."""
    import re
    found = cases() + wide_cases()
    count: dict[int, int] = {}
    for name in names:
        for seed, k in re.findall(r"(?:^| )s(\d+)\.(\d+) ", name):
            count[int(seed)] = max(count.get(int(seed), 0), int(k) + 1)
    for seed, n in count.items():
        found += random_cases(seed, n) + random_cases(seed, n, NEW_FAMILIES)
    by_name: dict[str, Case] = {}
    for c in found:
        by_name.setdefault(c.name, c)
    return by_name
