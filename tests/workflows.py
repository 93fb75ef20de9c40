"""A generator of realistic notebook cells: whole multi-statement workflows (stencil time
steps, Monte-Carlo, image processing, statistics, small ML steps, signal processing,
finance, n-body physics) as templates with parameters (sizes, dtypes, steps, seeds), so
one template yields many cells. Each `Workflow` is a set-up (the notebook's earlier cell
that makes the inputs) and the cell itself; the tests run it plainly and under %%fuse
(test_workflows_fidelity.py) and through the emulated CUDA kernels and the Numba backend
(test_workflows_kernels.py).

`workflows(per_template)` gives the corpus; CI takes a few per template, WORKFLOWS_ALL=1
many more (the wide run used while hunting). `python tests/workflows.py` prints the corpus.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

ALL = os.environ.get("WORKFLOWS_ALL", "") == "1"
PER_TEMPLATE = 30 if ALL else 5

# sizes are odd on purpose (1, primes, one off a power of two: 1023, 4097)
FLOATS = ("float32", "float64")


@dataclass(frozen=True)
class Workflow:
    name: str
    setup: str     # makes the cell's inputs (its own generator: both runs start alike)
    cell: str
    template: str


Template = Callable[[np.random.Generator], tuple[str, str]]
TEMPLATES: dict[str, Template] = {}


def template(fn: Template) -> Template:
    TEMPLATES[fn.__name__] = fn
    return fn


def _pick(g: np.random.Generator, options):
    return options[int(g.integers(len(options)))]


def _setup(seed: int, *lines: str) -> str:
    return "\n".join(["import numpy as np", f"_r = np.random.default_rng({seed})", *lines])


# -- stencils in a Python loop ---------------------------------------------------------

@template
def heat1d(g):
    n = _pick(g, (3, 7, 33, 1023, 4097))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 6))
    alpha = _pick(g, ("0.1", "0.25", "np.float32(0.2)"))
    style = _pick(g, ("slice_assign", "new_array", "inplace_add"))
    setup = _setup(int(g.integers(1000)), f"u = np.zeros({n}, np.{dt})", f"u[{n} // 2] = 1.0")
    if style == "slice_assign":
        body = f"    u[1:-1] = u[1:-1] + {alpha} * (u[2:] - 2 * u[1:-1] + u[:-2])"
    elif style == "inplace_add":
        body = f"    lap = u[2:] - 2 * u[1:-1] + u[:-2]\n    u[1:-1] += {alpha} * lap"
    else:
        body = f"    un = u.copy()\n    un[1:-1] = u[1:-1] + {alpha} * (u[2:] - 2 * u[1:-1] + u[:-2])\n    u = un"
    cell = f"for step in range({steps}):\n{body}\ntotal = u.sum()\npeak = float(u.max())\nprint(f'step {{step}}: total={{total:.6f}} peak={{peak:.4f}}')"
    return setup, cell


@template
def heat2d(g):
    h, w = _pick(g, ((3, 3), (5, 9), (33, 17), (64, 65), (4, 130)))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 4))
    setup = _setup(int(g.integers(1000)), f"T = _r.random(({h}, {w})).astype(np.{dt})")
    conv = _pick(g, ("", "\n    if np.abs(T - old).max() < 1e-3:\n        break"))
    cell = (f"for it in range({steps}):\n    old = T.copy()\n"
            "    T[1:-1, 1:-1] = 0.25 * (old[:-2, 1:-1] + old[2:, 1:-1] + old[1:-1, :-2] + old[1:-1, 2:])"
            f"{conv}\nmean_T = T.mean()\nedge = T[0].sum() + T[-1].sum()")
    return setup, cell


@template
def wave1d(g):
    n = _pick(g, (5, 33, 1023))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 5))
    c2 = _pick(g, ("0.5", "0.9"))
    setup = _setup(int(g.integers(1000)), f"x = np.linspace(0, 1, {n}, dtype=np.{dt})",
                   "u = np.exp(-100 * (x - 0.5) ** 2)", "u_prev = u.copy()")
    cell = (f"for _ in range({steps}):\n    u_next = np.zeros_like(u)\n"
            f"    u_next[1:-1] = 2 * u[1:-1] - u_prev[1:-1] + {c2} * (u[2:] - 2 * u[1:-1] + u[:-2])\n"
            "    u_prev, u = u, u_next\nenergy = (u ** 2).sum() + ((u - u_prev) ** 2).sum()")
    return setup, cell


@template
def life(g):
    h, w = _pick(g, ((5, 5), (8, 13), (33, 17), (64, 64)))
    dt = _pick(g, ("uint8", "int8", "bool", "int32"))
    steps = int(g.integers(1, 4))
    setup = _setup(int(g.integers(1000)), f"grid = (_r.random(({h}, {w})) < 0.35).astype(np.{dt})")
    count = ("    p = np.pad(grid, 1)\n" if g.random() < 0.5 else
             "    p = np.zeros((grid.shape[0] + 2, grid.shape[1] + 2), grid.dtype)\n    p[1:-1, 1:-1] = grid\n")
    to_int = ".astype(np.int32)" if dt == "bool" else ""
    cell = (f"for gen in range({steps}):\n{count}"
            f"    q = p{to_int}\n"
            "    n = (q[:-2, :-2] + q[:-2, 1:-1] + q[:-2, 2:] + q[1:-1, :-2] + q[1:-1, 2:]\n"
            "         + q[2:, :-2] + q[2:, 1:-1] + q[2:, 2:])\n"
            "    alive = (n == 3) | ((grid != 0) & (n == 2))\n"
            "    grid = alive.astype(grid.dtype)\n"
            "    print(gen, int(grid.sum()))\npopulation = grid.sum()")
    return setup, cell


@template
def jacobi(g):
    n = _pick(g, (4, 9, 33))
    dt = _pick(g, FLOATS)
    tol = _pick(g, ("1e-3", "1e-5"))
    setup = _setup(int(g.integers(1000)), f"A = _r.random(({n}, {n})).astype(np.{dt}) + {n} * np.eye({n}, dtype=np.{dt})",
                   f"bvec = _r.random({n}).astype(np.{dt})")
    cell = ("D = np.diag(A)\nR = A - np.diagflat(D)\nxs = np.zeros_like(bvec)\nerr = np.inf\nits = 0\n"
            f"while err > {tol} and its < 50:\n    x_new = (bvec - R @ xs) / D\n"
            "    err = np.abs(x_new - xs).max()\n    xs = x_new\n    its += 1\n"
            "resid = np.linalg.norm(A @ xs - bvec)\nprint(f'{its} iterations, err {err:.2e}')")
    return setup, cell


# -- Monte-Carlo ----------------------------------------------------------------------

@template
def montecarlo_pi(g):
    n = _pick(g, (1, 7, 1000, 4097))
    seed = int(g.integers(100))
    dt = _pick(g, ("float64", "float32"))
    setup = _setup(0)
    cell = (f"rng = np.random.default_rng({seed})\npts = rng.random(({n}, 2), dtype=np.{dt})\n"
            "inside = (pts ** 2).sum(axis=1) <= 1.0\npi_est = 4 * inside.mean()\n"
            "err = abs(pi_est - np.pi)\nprint(f'pi ~ {pi_est:.4f} (err {err:.3f})')")
    return setup, cell


@template
def random_walk(g):
    n, k = _pick(g, ((100, 1), (33, 7), (1023, 3)))
    seed = int(g.integers(100))
    setup = _setup(0)
    cell = (f"rng = np.random.default_rng({seed})\nsteps = rng.choice(np.array([-1, 1], np.int8), size=({k}, {n}))\n"
            "paths = np.cumsum(steps, axis=1)\nfinal = paths[:, -1]\nmax_dev = np.abs(paths).max(axis=1)\n"
            "frac_pos = (final > 0).mean()\nmsd = (paths.astype(np.float64) ** 2).mean(axis=0)")
    return setup, cell


@template
def option_mc(g):
    n = _pick(g, (7, 1000, 4097))
    seed = int(g.integers(100))
    dt = _pick(g, FLOATS)
    setup = _setup(0, f"S0 = np.{dt}(100.0)", "K = 105.0", "sigma = 0.2", "T = 1.0")
    cell = (f"rng = np.random.default_rng({seed})\nZ = rng.standard_normal({n}).astype(np.{dt})\n"
            "ST = S0 * np.exp((0.0 - 0.5 * sigma ** 2) * T + sigma * np.sqrt(T) * Z)\n"
            "payoff = np.maximum(ST - K, 0)\nprice = payoff.mean()\nstderr = payoff.std(ddof=1) / np.sqrt(len(Z)) if len(Z) > 1 else 0.0")
    return setup, cell


# -- images ---------------------------------------------------------------------------

@template
def image_gamma(g):
    h, w = _pick(g, ((1, 1), (7, 5), (33, 17), (64, 65)))
    gamma = _pick(g, ("2.2", "0.5", "1 / 2.2"))
    out = _pick(g, ("astype", "clip_astype", "round"))
    setup = _setup(int(g.integers(1000)), f"img = _r.integers(0, 256, ({h}, {w}, 3), dtype=np.uint8)")
    conv = {"astype": "(255 * lin ** (1 / g)).astype(np.uint8)",
            "clip_astype": "np.clip(255 * lin ** (1 / g) + 0.5, 0, 255).astype(np.uint8)",
            "round": "np.round(255 * lin ** (1 / g)).astype(img.dtype)"}[out]
    cell = (f"g = {gamma}\nf = img.astype(np.float32) / 255\nlin = f ** g\n"
            f"out = {conv}\ngray = (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)\n"
            "bright = gray.mean()\nif bright > 127:\n    label = 'bright'\nelse:\n    label = 'dark'")
    return setup, cell


@template
def image_blur(g):
    h, w = _pick(g, ((3, 3), (7, 9), (33, 17), (64, 65)))
    dt = _pick(g, ("uint8", "float32", "int16"))
    setup = _setup(int(g.integers(1000)), f"im = _r.integers(0, 256, ({h}, {w})).astype(np.{dt})")
    acc = _pick(g, ("np.int32", "np.float32", "np.float64"))
    cell = (f"a = im.astype({acc})\n"
            "blur = (a[:-2, :-2] + a[:-2, 1:-1] + a[:-2, 2:] + a[1:-1, :-2] + a[1:-1, 1:-1] + a[1:-1, 2:]\n"
            "        + a[2:, :-2] + a[2:, 1:-1] + a[2:, 2:]) / 9\n"
            "sharp = np.clip(2 * a[1:-1, 1:-1] - blur, 0, 255).astype(im.dtype)\n"
            "gx = a[:, 2:] - a[:, :-2]\ngy = a[2:, :] - a[:-2, :]\n"
            "edges = np.hypot(gx[1:-1, :], gy[:, 1:-1])\nmask = edges > edges.mean()\nn_edges = int(mask.sum())")
    return setup, cell


@template
def image_hist(g):
    h, w = _pick(g, ((1, 1), (7, 5), (33, 17), (64, 65)))
    setup = _setup(int(g.integers(1000)), f"img = _r.integers(0, 256, ({h}, {w}), dtype=np.uint8)")
    thr = _pick(g, ("128", "img.mean()", "np.median(img)"))
    cell = ("hist = np.bincount(img.ravel(), minlength=256)\ncdf = hist.cumsum()\n"
            "cdf_n = (cdf - cdf.min()) * 255 // max(int(cdf.max() - cdf.min()), 1)\n"
            "eq = cdf_n[img].astype(np.uint8)\n"
            f"t = {thr}\nbinary = (img > t).astype(np.uint8) * 255\n"
            "inv = 255 - img\nfrac = (binary > 0).mean()\nlevels = img // 64\nq = levels * 64 + 32")
    return setup, cell


@template
def image_normalize(g):
    n, h, w = _pick(g, ((1, 4, 4), (2, 7, 5), (3, 16, 17)))
    setup = _setup(int(g.integers(1000)), f"batch = _r.integers(0, 256, ({n}, {h}, {w}, 3), dtype=np.uint8)")
    scale = _pick(g, ("x = batch / 255.0", "x = batch.astype(np.float32) / 255", "x = batch * np.float32(1 / 255)"))
    cell = (f"{scale}\nif x.max() > 1:\n    x = x / 255\n"
            "mean = x.mean(axis=(0, 1, 2))\nstd = x.std(axis=(0, 1, 2))\nxn = (x - mean) / (std + 1e-7)\n"
            "flipped = xn[:, :, ::-1]\nchw = xn.transpose(0, 3, 1, 2)\nprint(xn.dtype, chw.shape)")
    return setup, cell


# -- statistics -------------------------------------------------------------------------

@template
def zscore_cov(g):
    n, d = _pick(g, ((2, 1), (7, 3), (100, 5), (1023, 4)))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"X = _r.standard_normal(({n}, {d})).astype(np.{dt}) * 3 + 1")
    cell = ("mu = X.mean(axis=0)\nsd = X.std(axis=0, ddof=1)\nZ = (X - mu) / sd\n"
            "Xc = X - mu\ncov = Xc.T @ Xc / (X.shape[0] - 1)\n"
            "corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))\n"
            "outliers = np.abs(Z) > 2\nn_out = outliers.sum()\nprint(f'{n_out} outliers, max |z| {np.abs(Z).max():.3f}')")
    return setup, cell


@template
def running_stats(g):
    n = _pick(g, (1, 7, 100, 1023, 4097))
    w = _pick(g, (1, 3, 5))
    dt = _pick(g, FLOATS + ("int32",))
    setup = _setup(int(g.integers(1000)), f"x = (_r.standard_normal({n}) * 10).astype(np.{dt})")
    cell = ("c = np.cumsum(x)\nrun_mean = c / np.arange(1, len(x) + 1)\n"
            f"w = {w}\nif len(x) >= w:\n    ma = (c[w - 1:] - np.concatenate(([0], c[:-w]))) / w\nelse:\n    ma = None\n"
            "d = np.diff(x)\nd2 = np.diff(x, n=2)\npct = np.percentile(x, [5, 50, 95])\n"
            "med = np.median(x)\nmad = np.median(np.abs(x - med))\nrng_ = x.max() - x.min()")
    return setup, cell


@template
def welford_loop(g):
    k, n = _pick(g, ((3, 4), (5, 33), (8, 7)))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"chunks = _r.standard_normal(({k}, {n})).astype(np.{dt})")
    cell = ("count = 0\nmean = np.zeros({0}, chunks.dtype)\nM2 = np.zeros({0}, chunks.dtype)\n".format(n) +
            "for row in chunks:\n    count += 1\n    delta = row - mean\n    mean += delta / count\n"
            "    M2 += delta * (row - mean)\nvar = M2 / (count - 1)\nok = np.allclose(var, chunks.var(axis=0, ddof=1), rtol=1e-3)")
    return setup, cell


# -- machine learning -------------------------------------------------------------------

@template
def logistic_regression(g):
    n, d = _pick(g, ((7, 2), (100, 3), (257, 8)))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 6))
    lr = _pick(g, ("0.1", "0.5"))
    setup = _setup(int(g.integers(1000)), f"X = _r.standard_normal(({n}, {d})).astype(np.{dt})",
                   f"y = (X[:, 0] + 0.5 * _r.standard_normal({n}) > 0).astype(np.{dt})")
    stop = _pick(g, ("", "\n    if np.linalg.norm(grad) < 1e-3:\n        break"))
    cell = (f"w = np.zeros({d}, np.{dt})\nb = 0.0\nlosses = []\n"
            f"for it in range({steps}):\n    z = X @ w + b\n    p = 1 / (1 + np.exp(-z))\n"
            "    loss = -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))\n"
            "    losses.append(loss.item())\n    grad = X.T @ (p - y) / len(y)\n"
            f"    w -= {lr} * grad\n    b -= {lr} * (p - y).mean(){stop}\n"
            "acc = ((p > 0.5) == (y > 0.5)).mean()\nprint(f'loss {losses[-1]:.4f} acc {acc:.3f}')")
    return setup, cell


@template
def softmax_xent(g):
    n, c = _pick(g, ((1, 3), (7, 10), (64, 33), (5, 1023)))
    dt = _pick(g, FLOATS + ("float16",))
    setup = _setup(int(g.integers(1000)), f"logits = (_r.standard_normal(({n}, {c})) * 3).astype(np.{dt})",
                   f"labels = _r.integers(0, {c}, {n})")
    cell = ("shifted = logits - logits.max(axis=1, keepdims=True)\nexp = np.exp(shifted)\n"
            "probs = exp / exp.sum(axis=1, keepdims=True)\n"
            "logp = shifted - np.log(exp.sum(axis=1, keepdims=True))\n"
            "loss = -logp[np.arange(len(labels)), labels].mean()\n"
            "onehot = np.zeros_like(probs)\nonehot[np.arange(len(labels)), labels] = 1\n"
            "dlogits = (probs - onehot) / len(labels)\npred = probs.argmax(axis=1)\nacc = (pred == labels).mean()")
    return setup, cell


@template
def kmeans_step(g):
    n, d, k = _pick(g, ((7, 2, 2), (100, 2, 3), (257, 3, 5)))
    dt = _pick(g, FLOATS)
    iters = int(g.integers(1, 4))
    setup = _setup(int(g.integers(1000)), f"P = _r.standard_normal(({n}, {d})).astype(np.{dt})",
                   f"C = P[:{k}].copy()")
    cell = (f"for it in range({iters}):\n    D = ((P[:, None, :] - C[None, :, :]) ** 2).sum(axis=-1)\n"
            "    assign = D.argmin(axis=1)\n    inertia = D.min(axis=1).sum()\n"
            f"    for j in range({k}):\n        members = P[assign == j]\n        if len(members):\n"
            "            C[j] = members.mean(axis=0)\ncounts = np.bincount(assign, minlength=C.shape[0])")
    return setup, cell


@template
def batchnorm(g):
    n, c = _pick(g, ((1, 3), (8, 16), (33, 7), (128, 65)))
    dt = _pick(g, FLOATS + ("float16",))
    setup = _setup(int(g.integers(1000)), f"x = _r.standard_normal(({n}, {c})).astype(np.{dt})",
                   f"gamma = np.ones({c}, np.{dt})", f"beta = np.zeros({c}, np.{dt})",
                   f"running_mean = np.zeros({c}, np.{dt})", f"running_var = np.ones({c}, np.{dt})")
    cell = ("eps = 1e-5\nmom = 0.1\nmu = x.mean(axis=0)\nvar = x.var(axis=0)\n"
            "xhat = (x - mu) / np.sqrt(var + eps)\nout = gamma * xhat + beta\n"
            "running_mean *= 1 - mom\nrunning_mean += mom * mu\n"
            "running_var[:] = (1 - mom) * running_var + mom * var\n"
            "relu = np.maximum(out, 0)\nfrac_active = (relu > 0).mean()")
    return setup, cell


@template
def attention(g):
    t, d = _pick(g, ((1, 4), (7, 8), (33, 16), (64, 32)))
    dt = _pick(g, FLOATS)
    causal = g.random() < 0.5
    setup = _setup(int(g.integers(1000)), *(f"{v} = _r.standard_normal(({t}, {d})).astype(np.{dt})" for v in "qkv"))
    mask = ("mask = np.triu(np.ones((len(q), len(q)), dtype=bool), k=1)\nscores = np.where(mask, -np.inf, scores)\n"
            if causal else "")
    cell = ("scores = q @ k.T / np.sqrt(q.shape[-1])\n" + mask +
            "scores = scores - scores.max(axis=-1, keepdims=True)\nweights = np.exp(scores)\n"
            "weights /= weights.sum(axis=-1, keepdims=True)\nout = weights @ v\n"
            "ent = -(weights * np.log(weights + 1e-12)).sum(axis=-1)\nres = out + q")
    return setup, cell


@template
def mlp_step(g):
    n, d, hdim = _pick(g, ((4, 3, 5), (32, 8, 16), (7, 1, 33)))
    dt = _pick(g, FLOATS)
    act = _pick(g, ("np.tanh(h)", "np.maximum(h, 0)", "h / (1 + np.exp(-h))"))
    setup = _setup(int(g.integers(1000)), f"X = _r.standard_normal(({n}, {d})).astype(np.{dt})",
                   f"W1 = (_r.standard_normal(({d}, {hdim})) * 0.5).astype(np.{dt})",
                   f"W2 = (_r.standard_normal(({hdim}, 1)) * 0.5).astype(np.{dt})",
                   f"t = _r.standard_normal(({n}, 1)).astype(np.{dt})")
    cell = (f"h = X @ W1\na = {act}\npred = a @ W2\nerr = pred - t\nmse = (err ** 2).mean()\n"
            "gW2 = a.T @ err * (2 / len(X))\nnorm = np.sqrt((gW2 * gW2).sum())\n"
            "if norm > 1.0:\n    gW2 = gW2 / norm\nW2 -= 0.01 * gW2\nprint(f'mse={float(mse):.5f}')")
    return setup, cell


# -- signal processing ------------------------------------------------------------------

@template
def signal_window(g):
    n = _pick(g, (2, 7, 64, 1023, 4097))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"t = np.arange({n}, dtype=np.{dt}) / {n}",
                   f"sig = np.sin(2 * np.pi * 5 * t) + 0.3 * _r.standard_normal({n}).astype(np.{dt})")
    win = _pick(g, ("0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))", "np.hanning(n)", "np.ones(n)"))
    cell = (f"n = len(sig)\nwin = {win} if n > 1 else np.ones(1)\nxw = sig * win\n"
            "energy = np.sum(xw ** 2)\nzc = np.count_nonzero(np.diff(np.signbit(sig)))\n"
            "rms = np.sqrt(np.mean(sig ** 2))\nclipped = np.clip(sig, -rms, rms)\n"
            "env = np.abs(sig)\nsmooth = env.copy()\nfor i in range(1, min(n, 20)):\n    smooth[i] = 0.9 * smooth[i - 1] + 0.1 * env[i]")
    return setup, cell


@template
def moving_average(g):
    n = _pick(g, (7, 33, 1023))
    w = _pick(g, (2, 3, 7))
    dt = _pick(g, FLOATS + ("float16", "int16"))
    setup = _setup(int(g.integers(1000)), f"x = (_r.standard_normal({n}) * 4).astype(np.{dt})")
    style = _pick(g, ("loop", "cumsum", "convolve"))
    if style == "loop":
        body = f"acc = np.zeros(len(x) - {w} + 1)\nfor k in range({w}):\n    acc += x[k:len(x) - {w} + 1 + k]\nma = acc / {w}"
    elif style == "cumsum":
        body = f"c = np.cumsum(x, dtype=np.float64)\nma = (c[{w} - 1:] - np.r_[0, c[:-{w}]]) / {w}"
    else:
        body = f"ma = np.convolve(x, np.ones({w}) / {w}, mode='valid')"
    cell = body + "\nresid = x[len(x) - len(ma):] - ma\nspikes = np.flatnonzero(np.abs(resid) > 2 * resid.std())"
    return setup, cell


# -- finance ----------------------------------------------------------------------------

@template
def drawdown(g):
    n = _pick(g, (1, 2, 7, 252, 1023))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"r = (_r.standard_normal({n}) * 0.01 + 0.0005).astype(np.{dt})")
    cell = ("wealth = np.cumprod(1 + r)\npeak = np.maximum.accumulate(wealth)\ndd = (wealth - peak) / peak\n"
            "mdd = dd.min()\nsharpe = r.mean() / r.std() * np.sqrt(252) if r.std() > 0 else float('nan')\n"
            "logret = np.log1p(r)\ntotal = np.expm1(logret.sum())\nprint(f'max drawdown {mdd:.2%}, total {total:+.3%}')")
    return setup, cell


@template
def portfolio(g):
    n, a = _pick(g, ((7, 2), (100, 4), (252, 3)))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"R = (_r.standard_normal(({n}, {a})) * 0.01).astype(np.{dt})",
                   f"wts = np.full({a}, 1 / {a}, dtype=np.{dt})")
    cell = ("port = R @ wts\ncum = np.cumprod(1 + port) - 1\nvol = port.std() * np.sqrt(252)\n"
            "cov = np.cov(R, rowvar=False)\nrisk = np.sqrt(wts @ cov @ wts)\n"
            "best = int(np.argmax(R.mean(axis=0)))\nwts2 = wts.copy()\nwts2[best] += 0.1\nwts2 /= wts2.sum()")
    return setup, cell


# -- physics ----------------------------------------------------------------------------

@template
def nbody(g):
    n = _pick(g, (2, 5, 16, 33))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 4))
    setup = _setup(int(g.integers(1000)), f"pos = _r.standard_normal(({n}, 3)).astype(np.{dt})",
                   f"vel = np.zeros(({n}, 3), np.{dt})", f"mass = _r.random({n}).astype(np.{dt}) + 0.5")
    cell = (f"dt = 0.01\nfor s in range({steps}):\n    diff = pos[None, :, :] - pos[:, None, :]\n"
            "    dist2 = (diff ** 2).sum(axis=-1) + 1e-3\n    inv3 = dist2 ** -1.5\n"
            "    np.fill_diagonal(inv3, 0)\n    acc = (diff * (inv3 * mass[None, :])[..., None]).sum(axis=1)\n"
            "    vel += acc * dt\n    pos += vel * dt\n"
            "ke = 0.5 * (mass * (vel ** 2).sum(axis=1)).sum()\ncom = (pos * mass[:, None]).sum(axis=0) / mass.sum()")
    return setup, cell


@template
def projectile(g):
    n = _pick(g, (1, 7, 100))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"v0 = (_r.random({n}) * 20 + 5).astype(np.{dt})",
                   f"ang = (_r.random({n}) * np.pi / 2).astype(np.{dt})")
    cell = ("g = 9.81\nvx = v0 * np.cos(ang)\nvy = v0 * np.sin(ang)\ntof = 2 * vy / g\nrange_ = vx * tof\n"
            "hmax = vy ** 2 / (2 * g)\nbest = ang[np.argmax(range_)]\nprint(f'best angle {np.degrees(best):.1f} deg')\n"
            "t = np.linspace(0, 0.9, 5)[:, None] * tof\ny = vy * t - 0.5 * g * t ** 2\nabove = (y >= 0).all()")
    return setup, cell


# -- mixed dtypes, scalars, control flow --------------------------------------------------

@template
def mixed_dtypes(g):
    n = _pick(g, (1, 7, 33, 1023))
    a, b = _pick(g, (("int8", "float32"), ("uint8", "int8"), ("float16", "float32"), ("int16", "uint8"),
                     ("bool", "int8"), ("float16", "int32"), ("uint8", "float64")))
    k = _pick(g, ("3", "2.5", "np.float32(1.5)", "np.int8(7)", "True", "200"))
    setup = _setup(int(g.integers(1000)), f"a = (_r.standard_normal({n}) * 20).astype(np.{a})",
                   f"b = (_r.standard_normal({n}) * 20).astype(np.{b})")
    cell = (f"s = a + b\np = a * {k}\nq = b - {k}\nm = np.maximum(a, b)\nw = np.where(a > b, a, {k})\n"
            "c = (a.astype(np.float32) + 0.5).astype(b.dtype)\nt = a.sum() + b.max()\ntot = s.sum(dtype=np.float64)\n"
            "info = (s.dtype, p.dtype, q.dtype, w.dtype)")
    return setup, cell


@template
def newton_while(g):
    n = _pick(g, (1, 7, 100))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"a = (_r.random({n}) * 10 + 0.1).astype(np.{dt})")
    tol = _pick(g, ("1e-6", "1e-3"))
    cell = ("xk = a / 2 + 1\nit = 0\n"
            f"while True:\n    nxt = xk - (xk * xk - a) / (2 * xk)\n    delta = np.abs(nxt - xk).max()\n    xk = nxt\n    it += 1\n"
            f"    if delta.item() < {tol} * max(1.0, float(np.abs(xk).max())) or it >= 30:\n        break\n"
            "ok = np.allclose(xk * xk, a, rtol=1e-3)\nprint(f'{it} its, delta={delta:.3g}')")
    return setup, cell


@template
def views_inplace(g):
    h, w = _pick(g, ((2, 3), (7, 5), (33, 17)))
    dt = _pick(g, FLOATS + ("int32", "int8"))
    setup = _setup(int(g.integers(1000)), f"M = (_r.standard_normal(({h}, {w})) * 5).astype(np.{dt})")
    cell = ("top = M[0]\ncol = M[:, -1]\nT = M.T\nflat = M.reshape(-1)\n"
            "M[M < 0] = 0\nM[:, 0] += 1\nM *= 2\nrowmax = M.max(axis=1)\nscaled = M / (rowmax[:, None] + 1)\n"
            "col_sum = col.sum()\nsame = np.shares_memory(top, M)")
    return setup, cell


@template
def grad_clip(g):
    shapes = _pick(g, (((3,), (2, 2)), ((7,), (5, 3)), ((1023,), (33, 17))))
    dt = _pick(g, FLOATS + ("float16",))
    clip = _pick(g, ("1.0", "10.0", "0.1"))
    setup = _setup(int(g.integers(1000)), f"g1 = _r.standard_normal({shapes[0]}).astype(np.{dt})",
                   f"g2 = _r.standard_normal({shapes[1]}).astype(np.{dt})",
                   f"p1 = np.zeros({shapes[0]}, np.{dt})", f"p2 = np.ones({shapes[1]}, np.{dt})")
    cell = ("grads = [g1, g2]\nparams = [p1, p2]\ntotal = np.sqrt(sum(float((gg * gg).sum()) for gg in grads))\n"
            f"if total > {clip}:\n    for gg in grads:\n        gg *= {clip} / total\n"
            "for pp, gg in zip(params, grads):\n    pp -= 0.1 * gg\nprint(f'norm {total:.4f}')")
    return setup, cell


# -- more numerics: periodic stencils, integer images, optimizers, norms -----------------

@template
def periodic_roll(g):
    n = _pick(g, (1, 2, 7, 64, 1023))
    dt = _pick(g, FLOATS + ("float16",))
    steps = int(g.integers(1, 5))
    c = _pick(g, ("0.3", "0.5"))
    setup = _setup(int(g.integers(1000)), f"u = _r.random({n}).astype(np.{dt})")
    scheme = _pick(g, (f"u = u + {c} * (np.roll(u, 1) - 2 * u + np.roll(u, -1))",
                       f"u = u - {c} * (u - np.roll(u, 1))",
                       f"u += {c} * (np.roll(u, -1) - u)"))
    cell = f"mass0 = u.sum()\nfor _ in range({steps}):\n    {scheme}\nmass1 = u.sum()\ndrift = abs(float(mass1) - float(mass0))\nlo, hi = u.min(), u.max()"
    return setup, cell


@template
def uint8_arith(g):
    h, w = _pick(g, ((1, 1), (7, 5), (33, 17)))
    k = _pick(g, ("50", "np.uint8(50)", "200", "1.5", "-10"))
    setup = _setup(int(g.integers(1000)), f"img = _r.integers(0, 256, ({h}, {w}), dtype=np.uint8)",
                   f"img2 = _r.integers(0, 256, ({h}, {w}), dtype=np.uint8)")
    cell = (f"wrapped = img + img2\nsat = np.clip(img.astype(np.int16) + {k}, 0, 255).astype(np.uint8)\n"
            "avg = ((img.astype(np.uint16) + img2) // 2).astype(np.uint8)\ndiff = np.abs(img.astype(np.int16) - img2)\n"
            "blend = (0.7 * img + 0.3 * img2).astype(np.uint8)\nbits = img & 0xF0 | (img2 >> 4)\n"
            "thr = np.where(img > 128, 255, 0)\ninv = ~img\nmean_diff = diff.mean()\nsq = img.astype(np.int32) ** 2")
    return setup, cell


@template
def adam_steps(g):
    n = _pick(g, (1, 7, 33, 1023))
    dt = _pick(g, FLOATS)
    steps = int(g.integers(1, 4))
    setup = _setup(int(g.integers(1000)), f"p = _r.standard_normal({n}).astype(np.{dt})",
                   f"m = np.zeros({n}, np.{dt})", f"v = np.zeros({n}, np.{dt})", "target = 0.5")
    cell = ("lr, b1, b2, eps = 1e-2, 0.9, 0.999, 1e-8\n"
            f"for t in range(1, {steps + 1}):\n    grad = 2 * (p - target)\n"
            "    m = b1 * m + (1 - b1) * grad\n    v = b2 * v + (1 - b2) * grad ** 2\n"
            "    mhat = m / (1 - b1 ** t)\n    vhat = v / (1 - b2 ** t)\n"
            "    p -= lr * mhat / (np.sqrt(vhat) + eps)\nloss = ((p - target) ** 2).sum()\nprint(f'{t}: {loss:.6f}')")
    return setup, cell


@template
def layernorm(g):
    n, d = _pick(g, ((1, 1), (4, 7), (16, 64), (3, 1023)))
    dt = _pick(g, FLOATS + ("float16",))
    kind = _pick(g, ("layer", "rms"))
    setup = _setup(int(g.integers(1000)), f"h = _r.standard_normal(({n}, {d})).astype(np.{dt})",
                   f"w = (1 + 0.1 * _r.standard_normal({d})).astype(np.{dt})")
    if kind == "layer":
        body = ("mu = h.mean(axis=-1, keepdims=True)\nvar = ((h - mu) ** 2).mean(axis=-1, keepdims=True)\n"
                "y = (h - mu) / np.sqrt(var + 1e-5) * w")
    else:
        body = "ms = np.mean(h * h, axis=-1, keepdims=True)\ny = h / np.sqrt(ms + 1e-6) * w"
    cell = body + "\ngelu = 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y ** 3)))\nres = h + gelu\nnorms = np.linalg.norm(res, axis=-1)"
    return setup, cell


@template
def pairwise(g):
    n, d = _pick(g, ((2, 1), (7, 3), (33, 2), (64, 5)))
    dt = _pick(g, FLOATS + ("float16",))
    setup = _setup(int(g.integers(1000)), f"pts = _r.standard_normal(({n}, {d})).astype(np.{dt})")
    cell = ("sq = (pts ** 2).sum(axis=1)\nD2 = sq[:, None] + sq[None, :] - 2 * pts @ pts.T\nD2 = np.maximum(D2, 0)\n"
            "D = np.sqrt(D2)\nD_direct = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))\n"
            "np.fill_diagonal(D_direct, np.inf)\nnn = D_direct.argmin(axis=1)\nnn_dist = D_direct.min(axis=1)\n"
            "K = np.exp(-D_direct ** 2 / 2)\nrow_sums = K.sum(axis=1)")
    return setup, cell


@template
def masked_stats(g):
    n = _pick(g, (1, 7, 100, 1023))
    dt = _pick(g, FLOATS + ("int32", "int8"))
    setup = _setup(int(g.integers(1000)), f"x = (_r.standard_normal({n}) * 10).astype(np.{dt})")
    cell = ("pos = x[x > 0]\nn_pos = pos.size\nmean_pos = pos.mean() if n_pos else 0.0\n"
            "y = x.copy()\ny[y < 0] = 0\ncnt = np.count_nonzero(x > 2)\nfrac = np.mean(x > 0)\n"
            "idx = np.argsort(x)[::-1][:3]\ntop = x[idx]\nsgn = np.sign(x)\ncs = np.cumsum(x > 0)\n"
            "s = x.sum()\nif s > 0:\n    label = 'pos'\nelif s < 0:\n    label = 'neg'\nelse:\n    label = 'zero'")
    return setup, cell


@template
def table_stats(g):
    r, c = _pick(g, ((4097, 3), (513, 33), (3, 4097), (1, 1023), (1023, 1), (65, 127)))
    dt = _pick(g, ("float16", "float32", "float64", "int8", "uint8", "int32", "bool"))
    axis = _pick(g, ("0", "1", "None", "-1"))
    if dt == "bool":
        make = f"tab = _r.random(({r}, {c})) < 0.3"
    elif dt[0] in "iu":
        make = f"tab = _r.integers(0 if '{dt}'[0] == 'u' else -100, 100, ({r}, {c})).astype(np.{dt})"
    else:
        make = f"tab = (_r.standard_normal(({r}, {c})) * 5 + 2).astype(np.{dt})"
    setup = _setup(int(g.integers(1000)), make)
    cell = (f"tot = tab.sum(axis={axis})\nmu = tab.mean(axis={axis})\nsd = tab.std(axis={axis})\n"
            f"hi = tab.max(axis={axis})\nwhere_hi = tab.argmax(axis={axis})\nlo = tab.min(axis={axis})\n"
            f"anyv = np.any(tab, axis={axis})\nallv = np.all(tab, axis={axis})\n"
            f"centered = tab - tab.mean(axis={axis}, keepdims=True)\n"
            f"scaled = (tab - tab.min(axis={axis}, keepdims=True)) / (np.ptp(tab, axis={axis}, keepdims=True) + 1)\n"
            f"nz = np.count_nonzero(tab, axis={axis})")
    return setup, cell


# -- notebook habits: histories, printing arrays, element loops, global RNG ---------------

@template
def history_stack(g):
    n = _pick(g, (1, 5, 33))
    dt = _pick(g, FLOATS + ("int32",))
    steps = int(g.integers(1, 5))
    setup = _setup(int(g.integers(1000)), f"state = (_r.standard_normal({n}) * 3).astype(np.{dt})")
    cell = ("history = [state.copy()]\nstats = {}\n"
            f"for k in range({steps}):\n    state = state * 0.5 + 1\n    history.append(state)\n"
            "    stats[k] = float(state.mean())\ntraj = np.stack(history)\nlast = history[-1]\n"
            "delta = traj[1:] - traj[:-1]\nsummary = {'min': traj.min(), 'max': traj.max()}\n"
            "count = 0\nfor h in history:\n    count += int((h > 0).sum())")
    return setup, cell


@template
def power_iteration(g):
    n = _pick(g, (2, 5, 17))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"B = _r.standard_normal(({n}, {n})).astype(np.{dt})",
                   "S = B @ B.T + np.eye(len(B), dtype=B.dtype)")
    cell = ("vec = np.ones(len(S), S.dtype) / np.sqrt(len(S))\nlam = 0.0\n"
            "for it in range(100):\n    w = S @ vec\n    lam_new = float(vec @ w)\n    vec = w / np.sqrt((w * w).sum())\n"
            "    if abs(lam_new - lam) < 1e-4 * abs(lam_new):\n        break\n    lam = lam_new\n"
            "resid = S @ vec - lam_new * vec\nrayleigh = vec @ S @ vec\nprint(f'lambda={lam_new:.4f} after {it + 1}')")
    return setup, cell


@template
def element_loop(g):
    n = _pick(g, (1, 4, 9))
    dt = _pick(g, FLOATS + ("int64", "int8"))
    setup = _setup(int(g.integers(1000)), f"a = (_r.standard_normal({n}) * 5).astype(np.{dt})")
    cell = ("out = np.empty_like(a)\nfor i in range(len(a)):\n    out[i] = a[i] * 2 if a[i] > 0 else -a[i]\n"
            "fib = np.zeros(len(a) + 2, a.dtype)\nfib[1] = 1\nfor i in range(2, len(fib)):\n    fib[i] = fib[i - 1] + fib[i - 2]\n"
            "vals = [v for v in a if v > 0]\ntotal = sum(vals) if vals else 0\nlst = a.tolist()\nmx = max(a)\n"
            "ok = bool(np.all(out >= 0))")
    return setup, cell


@template
def print_arrays(g):
    n = _pick(g, (1, 3, 7, 1001))
    dt = _pick(g, FLOATS + ("int16", "bool", "float16"))
    setup = _setup(int(g.integers(1000)), f"x = (_r.standard_normal({n}) * 4).astype(np.{dt})")
    cell = ("y = x * 2 if x.dtype != bool else ~x\nprint(y[:4])\nprint('shape', y.shape, y.dtype)\n"
            "print(f'mean={y.mean():.3f} first={y[0]}')\nprint(repr(y[-2:]))\nz = np.sort(y)[::-1]\n"
            "print(z.max(), z.argmin())\ns = str(y.sum())\ny")
    return setup, cell


@template
def global_random(g):
    n = _pick(g, (1, 7, 100))
    seed = int(g.integers(100))
    setup = _setup(0)
    cell = (f"np.random.seed({seed})\nnoise = np.random.randn({n})\nu = np.random.rand({n})\n"
            "walk = np.cumsum(np.where(u < 0.5, -1, 1))\nsignal = np.sin(np.arange({0}) / 3) + 0.1 * noise\n".format(n) +
            "idx = np.random.permutation(len(signal))\nshuffled = signal[idx]\nboot = [np.random.choice(signal, len(signal)).mean() for _ in range(3)]\n"
            "ci = (np.percentile(boot, 5), np.percentile(boot, 95))")
    return setup, cell


@template
def hist_unpack(g):
    n = _pick(g, (1, 7, 100, 1023))
    bins = _pick(g, (3, 10))
    dt = _pick(g, FLOATS + ("int32",))
    setup = _setup(int(g.integers(1000)), f"data = (_r.standard_normal({n}) * 10).astype(np.{dt})")
    cell = (f"counts, edges = np.histogram(data, bins={bins})\ncenters = (edges[:-1] + edges[1:]) / 2\n"
            "mode = centers[counts.argmax()]\ndensity = counts / counts.sum() / np.diff(edges)\n"
            "which = np.digitize(data, edges[1:-1])\nper_bin = np.bincount(which, weights=data.astype(np.float64), minlength=len(counts))\n"
            "lo, hi = np.quantile(data, [0.25, 0.75])\niqr = hi - lo\nclipped = np.clip(data, lo - 1.5 * iqr, hi + 1.5 * iqr)")
    return setup, cell


@template
def einsum_ops(g):
    b, n, d = _pick(g, ((1, 2, 3), (3, 5, 4), (2, 33, 8)))
    dt = _pick(g, FLOATS)
    setup = _setup(int(g.integers(1000)), f"Q = _r.standard_normal(({b}, {n}, {d})).astype(np.{dt})",
                   f"Wt = _r.standard_normal(({d}, {d})).astype(np.{dt})")
    cell = ("proj = np.einsum('bnd,de->bne', Q, Wt)\ngram = np.einsum('bnd,bmd->bnm', Q, Q)\ntr = np.einsum('bnn->b', gram)\n"
            "bmm = Q @ Wt\nsame = np.allclose(proj, bmm, atol=1e-4)\nnrm = np.sqrt(np.einsum('bnd,bnd->bn', Q, Q))\n"
            "unit = Q / nrm[..., None]\nouter = unit[:, :, None, :] * unit[:, None, :, :]")
    return setup, cell


# -- in-place updates through overlapping slices and views: a few statements of a pool --

_INPLACE_POOL = (
    "u[1:] += u[:-1]", "u[1:] = u[:-1]", "u[:-1] -= u[1:]", "u[::-1] += u", "u[1:] -= u[:-1].copy()",
    "np.cumsum(u, out=u)", "u[::2] *= -1", "u[u < 0] = 0", "u += u[::-1]", "u[0], u[-1] = u[-1], u[0]",
    "M[:, ::2] *= -1", "M.T[0] = 1", "M.reshape(-1)[::3] = 0", "np.fill_diagonal(M, 0)",
    "M[1:, :] += M[:-1, :]", "M -= M.mean(axis=0)", "M[M > 1] *= 0.5", "M[:, 0] = M[:, -1]",
    "for row in M:\n    row -= row.mean()", "for row in M[:3]:\n    row[:] = row[::-1]",
    "M[...] = M.T if M.shape[0] == M.shape[1] else M", "v = M[0]\nv += 1", "w = M.ravel()\nw[-1] = 7",
    "M[[0, -1]] += 1", "M[np.array([0, 0])] += 1", "u, M[0] = M[0].copy(), u[:M.shape[1]] * 0 if len(u) >= M.shape[1] else M[0]",
    "t = u[2:]\nu[:] = u * 2\ns = t.sum()", "c = M[:, 1]\nM *= 3\ncs = c + 0",
)


@template
def inplace_alias(g):
    n = _pick(g, (3, 7, 33))
    r, c = _pick(g, ((3, 3), (4, 7), (9, 5)))
    dt = _pick(g, FLOATS + ("int32", "int16"))
    k = int(g.integers(2, 6))
    stmts = [_pick_statement(g, _INPLACE_POOL) for _ in range(k)]
    setup = _setup(int(g.integers(1000)), f"u = (_r.standard_normal({n}) * 4).astype(np.{dt})",
                   f"M = (_r.standard_normal(({r}, {c})) * 4).astype(np.{dt})")
    cell = "\n".join(stmts) + "\nsu = u.sum()\nsm = M.sum(axis=0)"
    return setup, cell


# updates in the trace, then library calls fuselab runs for real (their views of the
# updated array, writes through them), then more updates. (Not sliding windows: an
# update of the array while such a window lives is a documented refusal.)
_LIBRARY_POOL = (
    "d = np.diag(S)", "dg = S.diagonal()", "top, bottom = np.split(S[:2 * (len(S) // 2)], 2)\ntop[0, 0] = -1",
    "med = np.median(S, axis=0)\nS -= med", "q = np.percentile(S, [25, 75])", "srt = np.sort(S, axis=1)",
    "u = np.unique(S.round(1))",
    "np.fill_diagonal(S, 1)", "tri = np.triu(S)", "S[:, 0].sort()", "rows = np.array_split(S, 3)\nrows[-1][...] = 0",
    "c = np.cov(S)", "S += np.eye(len(S), dtype=S.dtype)", "S *= 0.5", "S[S < 0] = 0", "S[0] += 1",
)


@template
def inplace_then_library(g):
    n = _pick(g, (3, 4, 7))
    dt = _pick(g, FLOATS)
    k = int(g.integers(2, 6))
    stmts = [_pick_statement(g, _LIBRARY_POOL) for _ in range(k)]
    setup = _setup(int(g.integers(1000)), f"S = _r.standard_normal(({n}, {n})).astype(np.{dt})")
    cell = "S += 1\n" + "\n".join(stmts) + "\ntotal = S.sum()\nfirst = S[0].copy()"
    return setup, cell


def _pick_statement(g: np.random.Generator, pool: tuple[str, ...]) -> str:
    return pool[int(g.integers(len(pool)))]


def generate(per_template: int = PER_TEMPLATE, seed: int = 0) -> list[Workflow]:
    out = []
    for k, (name, fn) in enumerate(TEMPLATES.items()):
        seen: set[tuple[str, str]] = set()
        g = np.random.default_rng([seed, k])
        tries = 0
        while len(seen) < per_template and tries < per_template * 6:
            tries += 1
            setup, cell = fn(g)
            if (setup, cell) in seen:
                continue
            seen.add((setup, cell))
            out.append(Workflow(f"{name}-{len(seen) - 1}", setup, cell, name))
    return out


def workflows(per_template: int = PER_TEMPLATE) -> list[Workflow]:
    return generate(per_template)


if __name__ == "__main__":   # print the corpus
    for w in workflows():
        print(f"# {w.name}\n{w.setup}\n# ---\n{w.cell}\n")
