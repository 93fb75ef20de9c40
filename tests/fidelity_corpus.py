"""The fidelity corpus: cells written the way notebooks are written. A systematic part
crosses expressions with the kinds of arrays a notebook holds (dtypes, shapes, byte
order) and with the ways a result is used (bound, printed, displayed, consumed by a later
line); a hand-written part covers control flow, containers, rebinding, copies and views,
opaque operations, ndarray subclasses, warnings and errors."""
from __future__ import annotations

import re

from fidelity import Case

SETUP = """\
import numpy as np
rng = np.random.default_rng(0)
x = rng.standard_normal(8).astype(np.float32)
m = rng.standard_normal((4, 6))
i8 = rng.integers(-100, 100, 10).astype(np.int8)
u8 = rng.integers(0, 255, 10).astype(np.uint8)
i32 = rng.integers(-1000, 1000, 10).astype(np.int32)
b = rng.random(10) > 0.5
h = (rng.standard_normal(9) * 3).astype(np.float16)
be = rng.standard_normal(6).astype('>f4')
z = np.zeros(5)
e = np.zeros(0)
sq = rng.standard_normal((3, 3)) + 3 * np.eye(3)
lst = [1, 2]
d = {}
class Box:
    pass
obj = Box()
"""

# -- systematic part ------------------------------------------------------------

# expressions over one array `a`, each crossed with every input it makes sense for
EXPRESSIONS = [
    "a + 1", "a * 2.5", "a - a.mean()", "a // 3", "a % 3", "-a", "abs(a)", "a ** 2", "a ** 0.5",
    "np.exp(a)", "np.sqrt(a)", "np.log(a)", "a / 0", "a > -2", "a == 300", "np.clip(a, -3, 7)",
    "a.sum()", "a.mean()", "a.mean(dtype=int)", "a.var()", "a.std()", "a.max()", "a.argmin()",
    "np.round(a, -1)", "np.round(a, 1)", "a.astype(np.float32)", "np.where(a > 0, a, 0)",
    "a.cumsum()", "np.sort(a)", "a[::-1]", "a[a > 0]", "a[2]", "np.count_nonzero(a)",
]
INPUTS = ["x", "i8", "u8", "b", "h", "be"]
FORMS = {
    "bound": "y = {e}",
    "shown": "{e}",
    "printed": "y = {e}\nprint(y)",
    "consumed": "t = {e}\ny = t + t",
}


def _systematic() -> list[Case]:
    cases = []
    for e in EXPRESSIONS:
        for a in INPUTS:
            expr = _subst(e, a)
            form = list(FORMS)[(EXPRESSIONS.index(e) + INPUTS.index(a)) % len(FORMS)]
            cases.append(Case(f"{form}:{expr}", FORMS[form].format(e=expr)))
    return cases


def _subst(expr: str, name: str) -> str:
    """`expr` with the array placeholder `a` (a whole word) replaced by `name`."""
    return re.sub(r"(?<![A-Za-z_.])a(?![A-Za-z_(])", name, expr)


# -- hand-written part ----------------------------------------------------------

HAND = [
    # results, intermediates, rebinding, aliases
    Case("chain", "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)"),
    Case("rebind input", "x = x * 2\ny = x + 1"),
    Case("inplace input", "x += 1\ny = x * 2"),
    Case("inplace alias", "w = x\nx += 1\ny = w * 2"),
    # found by the random cells (fidelity_random.py)
    Case("copy then inplace", "c = i32.copy()\ni32 *= 2\ny = c + i32"),
    Case("integer round then inplace", "r = np.round(i32, 1)\ni32 *= 2"),
    Case("copy of a view then inplace", "w = x[1:]\nc = w.copy()\nx += 1"),
    Case("out= into a whole-array view", "w = i8.T\nnp.add(w, 1, out=w)\nv = x.view()\nv += 1"),
    Case("big-endian view copied and rounded", "w = be[None]\nc = w.copy()\nr = np.round(be.T, 1)"),
    Case("*_like of a big-endian array keeps its byte order",
         "e = np.empty_like(be)\ne[...] = be\nz = np.zeros_like(be)\nf = np.full_like(be, 2)\n"
         "o = np.ones_like(be, dtype=np.int16)"),
    Case("view of a view, middle updated", "v = m[1:]\nw = v[0]\nu = w[::2]\nv += 1\nw -= 3"),
    Case("unpacked rows, one updated", "a, c = sq[:2]\nc *= 2"),
    Case("update through a view of a reshaped view", "w = u8[None]\nw[0] = w[-1]"),
    Case("ravel copies what is not contiguous", "r = i32[::-1].ravel()\ns = m[1:3].ravel()\nt = m[:, 1:].ravel()\n"
                                                "u = m.T.T.ravel()\ns[0] = 9\nt[0] = 8\nr[0] = 7\nu[1] = 6"),
    Case("alias of result", "y = x * 2\nw = y"),
    Case("alias of input", "y = x"),
    Case("pre-existing name rebound", "lst = x * 2\nq = lst + 1"),
    Case("del a name", "y = x * 2\ndel x"),
    Case("keeps intermediate when printed", "y = x * 2\nprint(y)"),
    Case("scalar result", "s = x.sum()\nflag = isinstance(s, np.floating)\nhashed = {s: 1}"),
    Case("scalar to float", "s = float(m.mean())\nk = int(i32.max())"),
    Case("python values", "n = 3\nname = 'x'\nk = n * 2\ny = x[:n] * k"),
    Case("function defined", "def f(a):\n    return a * 3\ny = f(x) + 1"),
    Case("lambda", "g = lambda v: v + 1\ny = g(x)"),
    Case("class in cell", "class P:\n    scale = 2\n    def go(self, v):\n        return v * self.scale\ny = P().go(x)"),
    # views and copies
    Case("views", "c = m[:, 1]\nt = m.T\nr = m.reshape(3, 8)\ns = x[::2]\nv = x.view()"),
    Case("copies", "c1 = x.copy()\nc2 = np.copy(x)\nc3 = np.array(x)\nc4 = x.astype(x.dtype)\nc5 = x ** 1\n"
                   "c6 = x.flatten()\nc7 = +x"),
    Case("asarray is the array", "a1 = np.asarray(x)\na2 = np.asanyarray(m)\na3 = np.ascontiguousarray(x)"),
    Case("view of result", "y = m * 2\nt = y.T\nc = y[1]"),
    Case("transpose copy layout", "c = np.copy(m.T)\nd2 = m.T.copy()"),
    Case("ravel of view", "r = m.T.ravel()\ns = m.ravel()"),
    Case("squeeze and expand", "e1 = np.expand_dims(x, 0)\ne2 = np.squeeze(e1)\ne3 = np.squeeze(x)\ne4 = x[None, :, None]"),
    Case("big-endian views", "v = be[1:]\nc = be.copy()\nw = be * 2\nt = be.T"),
    # printing and formatting
    Case("print array", "y = x * 2\nprint(y)\nprint(y.sum())"),
    Case("f-string", "msg = f'{x.sum():.3f} and {m.max()}'\nprint(msg)"),
    Case("repr and str", "r = repr(x.mean())\ns = str(m[0, :2])\nprint(r, s)"),
    Case("format spec", "s = '{:.2e}'.format(x.std())"),
    Case("print in loop", "for k in range(3):\n    print(k, (x * k).sum())"),
    Case("display scalar", "x.sum()"),
    Case("display array", "x * 2"),
    Case("display tuple", "x.min(), x.max()"),
    Case("display suppressed", "x * 2;"),
    Case("display after binding", "y = x + 1\ny.mean()"),
    Case("display none", "y = x + 1\nprint('done')"),
    # control flow on values
    Case("if on reduction", "if x.sum() > 0:\n    y = x * 2\nelse:\n    y = -x"),
    Case("if elif", "s = m.mean()\nif s > 1:\n    k = 1\nelif s > -1:\n    k = 0\nelse:\n    k = -1\ny = m * k"),
    Case("while loop", "v = np.abs(x) + 1\nn = 0\nwhile v.max() > 1.01:\n    v = np.sqrt(v)\n    n += 1"),
    Case("and or not", "ok = (x.max() > 0) and not (x.min() > 0)\nboth = bool(b.any()) or bool(b.all())"),
    Case("ternary", "y = x * 2 if x.mean() > 0 else x / 2"),
    Case("assert", "assert m.shape == (4, 6)\nassert (m * m).min() >= 0\ny = m + 1"),
    Case("break on value", "acc = np.zeros_like(x)\nfor k in range(10):\n    acc = acc + x\n    if acc.max() > 3:\n        break"),
    Case("len and range", "n = len(x)\ny = sum(x[i] for i in range(n))"),
    Case("range of traced int", "k = i32.argmax()\nr = list(range(k % 4))"),
    Case("iterate rows", "s = [row.sum() for row in m]\nt = [v * 2 for v in x]"),
    Case("iterate long", "big = np.arange(100.0)\ntotal = 0.0\nfor v in big * 2:\n    total += v"),
    Case("unpack rows", "a0, a1 = m[:2]\ny = a0 + a1"),
    Case("contains", "has = 0.0 in z\nhas2 = 5 in i32"),
    Case("item tolist", "v = x.max().item()\nl = m[0, :3].tolist()\nk = i8[0].item()"),
    Case("math module", "import math\nv = math.sqrt(float(np.abs(x).sum()))"),
    # try / except
    Case("try shape error", "try:\n    y = x + m\nexcept ValueError:\n    y = x * 2"),
    Case("try value error", "try:\n    v = float(x)\nexcept TypeError:\n    v = -1.0"),
    Case("try singular", "try:\n    inv = np.linalg.inv(np.zeros((2, 2)))\nexcept np.linalg.LinAlgError:\n    inv = None"),
    Case("try index", "try:\n    v = x[100]\nexcept IndexError as err:\n    v = str(err)"),
    Case("try no error", "try:\n    y = x * 2\nexcept Exception:\n    y = None"),
    Case("try data", "try:\n    if x.sum() > 100:\n        raise RuntimeError('big')\n    y = x\nexcept RuntimeError:\n    y = -x"),
    # containers
    Case("list comprehension", "ys = [x * k for k in range(3)]"),
    Case("dict of arrays", "out = {'a': x * 2, 'b': m.sum(axis=0)}"),
    Case("tuple of arrays", "pair = (x + 1, x - 1)\nfirst, second = pair"),
    Case("nested", "nest = {'l': [x * 2, (x + 1, 3)], 'n': 1}"),
    Case("append to existing list", "lst.append(x * 2)\nlst.append(m.mean())"),
    Case("set item on existing dict", "d['a'] = x * 2\nd['s'] = x.sum()"),
    Case("attribute on existing object", "obj.val = x * 2\nobj.n = 3"),
    Case("list then consume", "parts = [x[:4], x[4:]]\ny = np.concatenate(parts)"),
    Case("stack of list", "rows = [m[i] * i for i in range(4)]\ns = np.stack(rows)"),
    Case("closure", "def make():\n    k = x * 2\n    return lambda: k\nf = make()"),
    Case("zip enumerate", "tot = 0.0\nfor i, (u, v) in enumerate(zip(x[:3], x[3:6])):\n    tot += float(u * v) * i"),
    # in-place updates
    Case("mask assign", "y = x.copy()\ny[y < 0] = 0"),
    Case("mask assign input", "x[x < 0] = 0\ny = x * 2"),
    Case("index assign", "y = m.copy()\ny[0] = 1\ny[:, 2] = -1"),
    Case("fancy assign", "y = x.copy()\ny[[0, 2, 4]] = 9"),
    Case("inplace ops", "y = m * 1\ny *= 2\ny -= 1\ny /= 3"),
    Case("inplace int to float refused", "y = i32.copy()\ny += 1.5"),
    Case("out argument", "y = np.zeros_like(x)\nnp.add(x, 1, out=y)"),
    Case("fill and sort", "y = x.copy()\ny.sort()\nw = x.copy()\nw.fill(3)"),
    Case("inplace on view", "v = x[:4]\nv += 1"),
    Case("updates through views", "x[0] = 5\nw = x\nw += 1\nmm = x.reshape(2, 4)\nmm[:, 0] = -1\n"
                                  "v = x[1:4]\nv *= 10\nt = mm.T"),
    Case("view of a transpose updated", "t = m.T\nt[0] = 0\ns = m.sum()"),
    # opaque and data-dependent
    Case("unique", "u = np.unique(i8 % 5)\nn = u.shape[0]"),
    Case("flatnonzero", "idx = np.flatnonzero(x > 0)\nn = len(idx)\ny = x[idx] * 2"),
    Case("nonzero", "r, c = np.nonzero(m > 0)\nw = np.where(x > 0)"),
    Case("argwhere", "aw = np.argwhere(m > 0.5)"),
    Case("boolean mask", "pos = x[x > 0]\nmean_pos = pos.mean()"),
    Case("inv det solve", "inv = np.linalg.inv(sq)\ndet = np.linalg.det(sq)\nsol = np.linalg.solve(sq, np.ones(3))",
         tol="LAPACK inside and outside the trace may block differently"),
    Case("matmul", "y = m @ m.T\nv = m.dot(np.ones(6))\no = np.outer(x, x)"),
    Case("einsum", "y = np.einsum('ij,kj->ik', m, m)"),
    Case("fft", "f = np.fft.fft(x)\nr = np.fft.rfft(x)\nbk = np.fft.irfft(r, 8)"),
    Case("sort argsort", "s = np.sort(m, axis=0)\na2 = np.argsort(x)\ny = x[a2]"),
    Case("concatenate stack", "c = np.concatenate([x, x * 2])\ns = np.stack([x, x])\nv = np.vstack([x, x])\nhs = np.hstack([x, x])"),
    Case("cumsum diff", "c = np.cumsum(i8)\ndf = np.diff(x)\ncp2 = np.cumprod(u8[:3])"),
    Case("take repeat tile", "t = np.take(x, [1, 3])\nr = np.repeat(x[:3], 2)\nti = np.tile(x[:2], 3)"),
    Case("median percentile", "med = np.median(m)\nq = np.percentile(x, 25)"),
    Case("unknown function", "p = np.polyfit(np.arange(8.0), x, 1)\nc = np.corrcoef(m)"),
    Case("histogram", "hist, edges = np.histogram(x, bins=4)"),
    Case("random once", "r = np.random.default_rng(1).standard_normal(8)\ny = x + r\nr2 = rng.standard_normal(3)"),
    Case("logaddexp ufunc", "y = np.logaddexp(x, 0.5)"),
    Case("norm", "n1 = np.linalg.norm(x)\nn2 = np.linalg.norm(m, axis=1)\nn3 = np.linalg.norm(m, ord=np.inf, axis=0)",
         tol="NumPy's 2-norm of a whole vector is a BLAS dot; fuselab sums pairwise"),
    # subclasses and odd dtypes
    Case("matrix", "M = np.matrix([[1.0, 2.0], [3.0, 4.0]])\nP = M * M\nQ = M + np.ones((2, 2))", numpy_only=True),
    Case("masked", "ma = np.ma.masked_array(x, mask=x < 0)\nmm = ma.mean()\nmy = ma * 2", numpy_only=True),
    Case("object array", "oa = np.array([1, None, 3], dtype=object)\nn = oa[0] + 1", numpy_only=True),
    Case("structured", "st = np.zeros(3, dtype=[('a', 'f4'), ('b', 'i4')])\nsa = st['a'] + 1", numpy_only=True),
    Case("strings", "sarr = np.array(['a', 'bc'])\nln = np.char.str_len(sarr)", numpy_only=True),
    Case("complex", "c = x * 1j\nmag = np.abs(c)\nre = c.real"),
    Case("float16 reductions", "v = h.var()\ns = h.std()\nmn = h.mean()\nsm = h.sum()"),
    Case("bool power", "p = b ** 2\nq = b ** 3"),
    Case("uint8 comparisons", "g = u8 > -2\ne2 = u8 == 300\nc = np.clip(u8, -3, 7)"),
    Case("clip joint", "c1 = np.clip(i8, 0, 1.5)\nc2 = np.clip(x, np.float64(0), 2)"),
    Case("clip one bound of bool", "c = b.clip(0)"),   # CuPy 14: TypeError (no default bound for bool)
    Case("clip one bound of float and int", "c1 = x.clip(0)\nc2 = i32.clip(None, 5)\nc3 = np.clip(u8, 3, None)"),
    Case("round ints", "r1 = np.round(i32, -1)\nr2 = np.round(i8)\nr3 = np.round(x, 2)"),
    Case("mean dtypes", "a1 = x.mean(dtype=int)\na2 = m.mean(dtype=np.uint8)\na3 = b.mean(dtype=bool)\na4 = i8.mean()"),
    Case("where weak", "w1 = np.where(b, u8, 300)\nw2 = np.where(b, i8, 1.5)\nw3 = np.where(b, 1, 2)"),
    Case("astype weak", "a1 = np.float32(2.5).astype(np.int8)\na2 = (x > 0).astype(np.uint8) * 255"),
    Case("count nonzero types", "c = np.count_nonzero(m > 0, axis=0)\nk = np.count_nonzero(b)"),
    Case("big-endian math", "s = be.sum()\nm2 = be.mean()\ny = be + x[:6]"),
    # warnings
    Case("divide by zero", "y = x / 0"),
    Case("log of zero", "y = np.log(z)"),
    Case("sqrt negative", "y = np.sqrt(m)"),
    Case("mean of empty", "mu = e.mean()\nmv = np.mean(e)"),
    Case("var of one", "v = np.var(x[:1], ddof=1)"),
    # np.var's steps warn from NumPy's own lines, each once a session: an empty slice's
    # two divisions both warn, and a second variance in the cell warns no more
    Case("var of empty", "v = e.var()\ns = np.std(e)"),
    Case("var overflow", "v = (x * np.float32(1e37)).var()\nw = np.var(m, ddof=6)"),
    # "Degrees of freedom" and "Mean of empty slice" come from NumPy's files for np.var,
    # np.mean and both stds (once a session) but from the user's line for x.var(), x.mean()
    Case("empty slices, methods and functions",
         "a = np.mean(e)\nb = e.mean()\nc = np.mean(e)\nd = np.var(e)\nf = e.var()\ng = np.var(e)\n"
         "s1 = e.std()\ns2 = np.std(e)\ns3 = m.std(axis=0, ddof=4)\ns4 = np.var(m, axis=1, ddof=7)"),
    # a ufunc called on arrays a graph break computed runs as NumPy, from fuselab's code:
    # its warnings still come from the user's line (each once there), under its errstate
    Case("ufunc on computed arrays warns at the line",
         "ee = np.nan_to_num(be / 0)\nfor k in range(3):\n    np.add(ee[:-1], ee[1:], out=ee[1:])\n"
         "with np.errstate(over='ignore'):\n    q = np.multiply(ee, ee)\nr = np.multiply(ee, ee)\n"
         "s = np.divide.reduce(np.zeros(3))\ndef f(a):\n    return np.log(a)\nt = f(np.zeros(2))"),
    # small values computed before a graph break warn in their place, before the lines
    # after it (an int8 scalar's overflow, a mean of nothing)
    Case("small warnings before a break",
         "i2 = [v * 2 for v in i8[:3]]\nr3 = sq[:0].mean()\nh += 0.5\ni5 = np.unique(sq)\ni6 = h.tolist()"),
    Case("scalar overflow in a comprehension, then a break",
         "s3 = float(z.sum())\ni4 = [v * 2 for v in i8[:3]]\nee5 = np.nan_to_num(i8 / 0)"),
    Case("empty mean before an if", "r1 = u8[:0].mean()\nee3 = z + 200\nif m.sum() > 0:\n    y5 = m * 2\n"
         "else:\n    y5 = m - 1\nee6 = np.nan_to_num(z / 0)"),
    Case("empty slices in a loop", "out = []\nfor k in range(3):\n    out.append(np.std(e) + e.var() + np.mean(e))"),
    Case("overflow", "y = np.float32(3e38) * x.astype(np.float32) * 10"),
    Case("cast nan", "y = np.array([np.nan, 1.0]).astype(np.int32)"),
    Case("warning in loop", "acc = 0\nfor k in range(3):\n    acc = acc + np.log(z + k)"),
    Case("errstate ignore", "with np.errstate(divide='ignore'):\n    y = np.log(z)"),
    # one node two lines ask for (hash-consed): each line warns, under its own errstate;
    # NumPy's internal steps (np.mean's division) warn once, from NumPy's file
    Case("shared node warns at each line", "a = i8 / 0\nb = i8 / 0"),
    Case("shared node, errstate ignore first",
         "with np.errstate(all='ignore'):\n    a = i8 / 0\nfor j in range(2):\n    z = z * 0.5\nb = np.nan_to_num(i8 / 0)"),
    Case("shared node, errstate ignore second", "a = x / 0\nwith np.errstate(all='ignore'):\n    b = x / 0"),
    Case("shared node, errstate raise second",
         "a = x / 0\ntry:\n    with np.errstate(divide='raise'):\n        b = x / 0\nexcept FloatingPointError:\n    b = None"),
    Case("shared mean warns its division once", "a = e.mean()\nb = e.mean()"),
    # a line that uses a value again, not computing it, gives no warning of its own
    Case("in-place update of a value computed under errstate",
         "with np.errstate(all='ignore'):\n    a = u8 / 0\nb = np.sort(x)\na[:2] = 7"),
    Case("overflow in a cumulative sum", "c = (i32 * i32).cumsum()\nd = np.cumprod(m * 1e300)"),
    # a reduction's overflow comes from the line of NumPy's code its call form runs:
    # np.sum -> fromnumeric.py, x.sum() -> _methods.py, x.cumsum() -> the user's line;
    # one node that two call forms ask for warns at both places
    Case("reduction overflow by call form",
         "big = np.abs(m) + 1e308\ns1 = big.sum()\ns2 = np.sum(big)\np1 = np.prod(big, axis=0)\n"
         "p2 = big.prod(axis=1)\nc1 = big.cumsum()\nc2 = np.cumsum(big)\nmu = np.mean(big)\ns3 = big.sum(axis=0)"),
    # float16 variances follow NumPy's _var step by step: each step warns from its own
    # line there, named by its ufunc (the deviations squared: "overflow encountered in square")
    Case("float16 variance steps warn from NumPy's lines",
         "v0 = np.exp(-abs(u8))\nr3 = np.var(v0, ddof=1)\nr4 = v0.std()\nbig = h * 300\nr5 = big.var()\n"
         "r6 = np.std(big, axis=0)\nr7 = np.full(4, 60000, np.float16).var()"),
    Case("reduction overflow on several lines",
         "big = np.abs(m) + 1e308\nfor k in range(2):\n    s = big.sum() + k\nt = big.cumsum()\nu = big.cumsum()\n"
         "v = np.add.reduce(big)"),
    Case("copy of a value computed under errstate", "with np.errstate(all='ignore'):\n    a = m / 0\nc = a.copy()"),
    Case("a graph break's warnings come before the later lines' own",
         "e = np.nan_to_num(x / 0)\ne -= e.mean()"),
    Case("warning from an untraced function", "y = x * np.nan\nz2 = np.nanmean(y)\nw = np.nanmax(y)"),
    # plain NumPy that runs while the cell is traced (on values Python holds, of an
    # untraced array) warns in its place, after the traced lines above it, whose nodes
    # only run later (fidelity_random seed 85271)
    Case("plain NumPy during the trace warns after the lines above",
         "np.add(m, 1, out=m)\nee = np.nan_to_num(i32 / 0)\nr = np.var(x[:0], axis=0)\nf = np.float32(2) * ee"),
    Case("plain NumPy warns after a traced overflow above it",
         "a = x * np.float32(1e38)\nb = np.float32(2) * np.nan_to_num(i32 / 0)\nc = a + b.sum()"),
    Case("untraced function warns between traced ones", "a = np.log(z)\nc = np.nanmedian(a * np.nan)\nd = a / 0"),
    # NumPy functions written in Python warn of their floating-point errors in the words
    # of the ufunc they run, from their own line (np.diff: "invalid value encountered in
    # subtract", numpy/lib/_function_base_impl.py), once there a session, under the
    # errstate of the user's line (random cell 222615)
    Case("a NumPy function's floating-point warning comes from its line",
         "d1 = np.diff(np.array([np.inf, np.inf, 1.0]))\nd2 = np.diff(x / 0)\nc = np.corrcoef(np.ones(5), x[:5])\n"
         "g = np.gradient(np.array([np.inf, np.inf, 1.0]))\np = np.polyval([1e200, 1e200], 1e200)\n"
         "with np.errstate(invalid='ignore'):\n    d3 = np.diff(-x / 0)", numpy_only=True),
    # np.round's scale is NumPy's power of ten (1e9 times 10 per further digit, rounded
    # each time); past what the dtype holds (np.around(x, -400)) NumPy computes it
    Case("np.round past the dtype's powers of ten",
         "s = np.around(x, -400)\nt = x.round(400)\na = np.around(i32, -400)\nc = np.round(u8, -400)\n"
         "d = np.round(h, 5)\ne2 = np.round(x, 39)\nu = np.round(m, 30)\nw = np.round(m, -308)\n"
         "try:\n    k = np.around(x, 2**40)\nexcept OverflowError as err:\n    msg = str(err)", numpy_only=True),
    Case("a NumPy function's floating-point error raises in its words",
         "try:\n    with np.errstate(invalid='raise'):\n        d = np.diff(np.array([np.inf, np.inf]))\n"
         "except FloatingPointError as err:\n    msg = str(err)", numpy_only=True),
    Case("errstate raise", "try:\n    with np.errstate(divide='raise'):\n        y = x / 0\nexcept FloatingPointError:\n    y = None"),
    Case("scalar divide", "s = z.sum()\nq = s / s"),
    # errors: the namespace stays as it was
    Case("name error", "y = x * 2\nw = nope + 1"),
    Case("shape error", "y = x + m"),
    Case("type error", "y = x + 'a'"),
    Case("index error", "y = x[100]"),
    Case("axis error", "y = x.sum(axis=3)"),
    Case("overflow error", "y = i8 + 1000"),
    Case("zero-size max", "y = e.max()"),
    Case("raise in cell", "y = x * 2\nraise ValueError('mine')"),
    Case("negative int power", "y = i8 ** -1"),
    Case("error after append", "lst.append(x * 2)\nboom = undefined_thing"),
    Case("not callable", "y = x(3)"),
    Case("no attribute", "y = x.nonexistent"),
    Case("bad reshape", "y = m.reshape(5, 5)"),
    Case("unhashable", "dd = {x: 1}"),
    Case("ambiguous truth", "if x > 0:\n    y = 1"),
]

# more notebook habits: writers, splits, fancy and mask indexing, builtins on arrays
HAND += [
    Case('habit: x.sort()', 'x.sort()\ny = x[0]'),
    Case('habit: y = np.empty_like(x)', 'y = np.empty_like(x)\nnp.copyto(y, x * 2)'),
    Case('habit: y = x[::2]', 'y = x[::2]\ny[:] = 0'),
    Case('habit: a, b2 = np.split(x, 2)', 'a, b2 = np.split(x, 2)'),
    Case('habit: s = x.sum()', 's = x.sum()\ns2 = s.item()\nt = s * 2'),
    Case("habit: msg = f'{x}'", "msg = f'{x}'"),
    Case('habit: g = x.T @ x', 'g = x.T @ x'),
    Case('habit: def setg():', 'def setg():\n    global G\n    G = x * 2\nsetg()'),
    Case('habit: import numpy as np2', 'import numpy as np2\ny = np2.exp(x)\nz = np2.zeros(3)'),
    Case('habit: y = x.astype(np.float64).sum()', 'y = x.astype(np.float64).sum()'),
    Case('habit: y = np.array([x, x])', 'y = np.array([x, x])'),
    Case('habit: y = np.asarray([1, 2]) + x[:2]', 'y = np.asarray([1, 2]) + x[:2]'),
    Case('habit: ys = list(map(lambda v: v * 2, [x, m]))', 'ys = list(map(lambda v: v * 2, [x, m]))'),
    Case('habit: y = x.reshape(2, -1).sum(axis=1).tolist(', 'y = x.reshape(2, -1).sum(axis=1).tolist()'),
    Case('habit: k = int(np.argmax(x))', 'k = int(np.argmax(x))\ny = x[k]'),
    Case('habit: y = x.mean() if len(x) > 3 else 0', 'y = x.mean() if len(x) > 3 else 0'),
    Case('habit: y = np.maximum.accumulate(x)', 'y = np.maximum.accumulate(x)'),
    Case('habit: y = np.add.outer(x[:3], x[:2])', 'y = np.add.outer(x[:3], x[:2])'),
    Case('habit: r = np.random.default_rng(0).permutation', 'r = np.random.default_rng(0).permutation(x)'),
    Case('habit: np.random.shuffle(x)', 'np.random.shuffle(x)'),
    Case('habit: y = x.copy()', 'y = x.copy()\nz = y.tobytes()'),
    Case('habit: y = m[m[:, 0] > 0]', 'y = m[m[:, 0] > 0]'),
    Case('habit: y = m[:, [0, 2]]', 'y = m[:, [0, 2]]'),
    Case('habit: y = m[[0, 1], [1, 2]]', 'y = m[[0, 1], [1, 2]]'),
    Case('habit: y = x[np.array([1, 3])]', 'y = x[np.array([1, 3])]'),
    Case('habit: y = np.where(m > 0)[0]', 'y = np.where(m > 0)[0]'),
    Case('habit: y = x.nonzero()', 'y = x.nonzero()'),
    Case('habit: w = x > 0', 'w = x > 0\ny = x[w].sum() / w.sum()',
         tol="y is float64 of a float32 sum, which fuselab's kernel adds in another order than CuPy"),
    Case('habit: c = np.cov(m)', 'c = np.cov(m)'),
    Case("habit: y = np.einsum('i,i->', x, x)", "y = np.einsum('i,i->', x, x)"),
    Case('habit: y = np.allclose(x, x)', 'y = np.allclose(x, x)\nz = np.array_equal(x, x * 1)'),
    Case('habit: y = x.max() - x.min()', 'y = x.max() - x.min()\nok = y > 0'),
    Case('habit: i = 0', 'i = 0\nwhile x[i] < 0.5 and i < 7:\n    i += 1'),
    Case('habit: y = sorted(x[:4])', 'y = sorted(x[:4])'),
    Case('habit: y = max(x[:3])', 'y = max(x[:3])'),
    Case('habit: y = np.float32(x.sum())', 'y = np.float32(x.sum())'),
    Case('habit: y = round(float(x[0]), 2)', 'y = round(float(x[0]), 2)\nz = round(x[0])'),
]


def cases() -> list[Case]:
    seen: set[str] = set()
    out = []
    for c in HAND + _systematic():  # a cell written by hand wins over a generated twin
        if c.cell not in seen:
            seen.add(c.cell)
            out.append(c)
    return out
HAND += [
    Case("function kept in a container", "fs = {'double': lambda: x * 2}\nv = fs['double']()"),
    Case("loop accumulating python float", "tot = 0.0\nfor k in range(3):\n    tot += float((x * k).sum())"),
]
