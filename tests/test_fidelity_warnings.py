"""Fidelity of warnings (and of np.errstate's other modes): a `%%fuse` cell gives the
warnings plain execution gives, at the same place (the cell's line, or NumPy's own line
where NumPy's Python code casts), as often as Python's filters show them, under the
filters and np.errstate the cell's own code sets; and a numpy.random Generator or
RandomState given traced arrays acts on the notebook's arrays as NumPy does."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Case, Harness, assert_as_plain, differences  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402

_CATCH = "import warnings\nwith warnings.catch_warnings():\n"
_CALL = "np.seterrcall(lambda *args: print('ERR', args))\n"
_UNCALL = "prev = np.seterrcall(None)\ndel prev\n"

CELLS = [
    # casts fuselab makes while tracing (a Python float into float32) or at a graph break
    # (int() of a complex value): from the cell's line, each line once, as plain
    ("cast python float into float32", "f32 = np.array([1.0, 2.0], dtype=np.float32)", "r = f32 * 1e300\n"),
    ("cast python int into float16", "h2 = np.array([1.0], dtype=np.float16)", "r = h2 + 100000\n"),
    ("cast on two lines", "f32 = np.array([1.0], dtype=np.float32)", "r = f32 * 1e300\ns = f32 * 1e300\n"),
    ("cast in a loop", "f32 = np.array([1.0], dtype=np.float32)", "for k in range(3):\n    r = f32 * 1e300\n"),
    ("cast in a cell function", "f32 = np.array([1.0], dtype=np.float32)",
     "def f(v):\n    return v * 1e300\nr = f(f32)\ns = f(f32)\n"),
    ("int of complex", "c = np.array([1+2j])", "r = int(c[0])\n"),
    ("float of complex", "c = np.array([1+2j])", "r = float(c[0])\n"),
    ("int32 of nan scalar", "a = np.array([np.nan])", "r = np.int32(a[0])\n"),
    ("full nan into int from numpy's line", "", "r = np.full(3, np.nan, dtype=int)\n"),
    # a C function fuselab runs opaque words its overflow as NumPy does at the user's line:
    # a.trace() sums ("in reduce"), np.inner of vectors is a dot ("in dot")
    ("trace method overflow words", "a = np.array([[1e308, 0.0], [0.0, 1e308]])", "t = a.trace()\n"),
    ("inner overflow words", "a = np.array([1e300, 2.0])", "r = np.inner(a, a)\n"),
    # np.clip's bounds cast into float16 inside numpy/_core/_methods.py _clip: from its
    # lines (another for one bound), as a function and as a method
    ("clip bounds cast from numpy's line", "h2 = np.array([1.0, 2.0], dtype=np.float16)",
     "r = np.clip(h2, -1e6, 1e6)\ns = h2.clip(-1e6, 1e6)\nt = np.clip(h2, None, 1e6)\nu = h2.clip(min=-1e6)\n"),
    # integer floor division's own overflow (MIN // -1), under errstate too
    ("int8 min floordiv", "a = np.array([-128, 5], dtype=np.int8)", "r = a // -1\ns = np.abs(a)\nt = -a\n"),
    ("int64 min floordiv", "a = np.array([np.iinfo(np.int64).min])", "r = a // -1\n"),
    ("int8 min floordiv inplace", "a = np.array([-128, 5], dtype=np.int8)", "a //= -1\n"),
    ("int8 min floordiv raise", "a = np.array([-128], dtype=np.int8)", "with np.errstate(over='raise'):\n    r = a // -1\n"),
    # np.round(x, d) runs the array's method from fromnumeric.py's _wrapfunc: its steps'
    # overflows warn from that line (once a session), x.round(d)'s from the user's line
    ("np.round overflow from numpy's line", "h2 = np.array([1.0, 700.0], dtype=np.float16)",
     "r = np.round(h2, 2)\ns = np.around(h2 * 2, 2)\nt = h2.round(2)\n"),
    ("np.round overflow in a loop", "a = np.array([1.0, 1e307])", "for k in range(1, 4):\n    r = np.round(a, k)\n"),
    # steps an operation traces without a tracer of their own (the product inside
    # x.round(d), the squares inside np.linalg.norm) raise at the line under its errstate
    ("x.round overflow raise", "a = np.array([1.0, 2.0])", "with np.errstate(over='raise'):\n    r = (a * 1e307).round(1)\n"),
    ("np.round overflow raise", "a = np.array([1.0, 2.0])", "with np.errstate(over='raise'):\n    r = np.round(a * 1e307, 1)\n"),
    ("norm overflow raise", "a = np.array([[1.0, 1e300], [2.0, 3.0]])",
     "with np.errstate(over='raise'):\n    r = np.linalg.norm(a, axis=1)\n"),
    # np.linalg.norm's steps warn from numpy/linalg/_linalg.py in NumPy's words (the full
    # 2-norm is a dot), at each computation: a square the user's own line shares warns
    # there too, and a second norm under errstate(over='raise') raises
    ("norm axis from numpy's line", "a = np.array([[1.0, 1e300], [2.0, 3.0]])",
     "r = np.linalg.norm(a, axis=1)\ns = np.linalg.norm(a, axis=0)\nt = np.linalg.norm(a, axis=(0, 1))\n"),
    ("norm full is a dot", "a = np.array([[1.0, 1e300], [2.0, 3.0]])",
     "r = np.linalg.norm(a)\nwith np.errstate(all='raise'):\n    try:\n        s = np.linalg.norm(a)\n"
     "    except FloatingPointError as ex:\n        msg = str(ex)\n"),
    ("norm ord 1 sum from numpy's line", "a = np.array([1e308, 1e308])", "r = np.linalg.norm(a, ord=1)\n"),
    ("norm square shared after", "a = np.array([[1.0, 1e300], [2.0, 3.0]])",
     "r = np.linalg.norm(a, axis=1)\nq = a * a\n"),
    ("norm square shared before", "a = np.array([[1.0, 1e300], [2.0, 3.0]])",
     "q = a * a\nr = np.linalg.norm(a, axis=1)\n"),
    # a NumPy function's step whose warning showed once (from NumPy's line) still
    # raises when a later line computes it under errstate(...='raise')
    ("var again under raise", "a = np.array([1.0, 700.0], dtype=np.float16)",
     "v = np.var(a * np.float16(300))\nwith np.errstate(over='raise'):\n    w = np.var(a * np.float16(300))\n"),
    ("mean of empty again under raise", "e2 = np.zeros(0)",
     "k = np.mean(e2)\nwith np.errstate(invalid='raise'):\n    k2 = np.mean(e2)\n"),
    ("std again under raise", "a = np.array([1.0, -2.0]) * 1e200",
     "v = np.std(a)\nwith np.errstate(over='raise'):\n    w = np.std(a)\n"),
    ("norm again under raise", "a = np.array([[1.0, 2.0], [2.0, 3.0]])",
     "r = np.linalg.norm(a * 1e300, axis=1)\nwith np.errstate(over='raise'):\n    s = np.linalg.norm(a * 1e300, axis=1)\n"),
    # NumPy's names for the operation
    ("complex divide by zero", "c = np.array([1+2j, 0j])", "r = c / 0\ns = np.true_divide(c, 0)\n"),
    ("float32 inplace add float64 scalar", "x2 = np.array([0.1], dtype=np.float32)", "x2 += np.float64(1e300)\n"),
    ("float32 multiply out float64 scalar", "x2 = np.array([0.1], dtype=np.float32)",
     "np.multiply(x2, np.float64(1e300), out=x2)\n"),
    # np.errstate(all='call' / 'log')
    ("errstate call without function", "a = np.arange(3.0)", _UNCALL + "with np.errstate(all='call'):\n    r = a / 0\n"),
    ("errstate call in order with prints", "a = np.arange(3.0)",
     _CALL + "print('before')\nwith np.errstate(all='call'):\n    r = a / 0\n    s = np.log(a - 1)\nprint('after')\n" + _UNCALL),
    ("errstate call each iteration", "a = np.arange(3.0)",
     _CALL + "with np.errstate(divide='call'):\n    for k in range(3):\n        r = a / 0\n" + _UNCALL),
    ("errstate log", "a = np.arange(3.0)",
     "class L:\n    def write(self, m):\n        print('LOG', m)\nnp.seterrcall(L())\nwith np.errstate(all='log'):\n"
     "    r = a / 0\n" + _UNCALL),
    # the cell's own warning filters
    ("catch_warnings error raises", "a = np.arange(3.0)", _CATCH + "    warnings.simplefilter('error')\n    r = a / 0\n"),
    ("catch_warnings error caught", "a = np.arange(3.0)",
     _CATCH + "    warnings.simplefilter('error')\n    try:\n        r = a / 0\n    except RuntimeWarning as e:\n"
     "        msg = str(e)\nr = a + 1\n"),
    ("catch_warnings ignore on a cast then warns after", "f32 = np.array([1.0], dtype=np.float32)",
     _CATCH + "    warnings.simplefilter('ignore')\n    r = f32 * 1e300\ns = f32 * 1e300\n"),
    ("catch_warnings ignore then warns after", "a = np.arange(3.0)",
     _CATCH + "    warnings.simplefilter('ignore')\n    r = a / 0\ns = a / 0\n"),
    ("catch_warnings ignore keeps an earlier line's warning", "a = np.arange(3.0)",
     "import warnings\nq = a / 0\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n"
     "    r = q + 1\n    t = a / 0\ns = r * 2\n"),
    ("catch_warnings record counts", "a = np.arange(3.0)",
     "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
     "    for k in range(3):\n        r = a / 0\nn = len(w)\nm = [str(x.message) for x in w]\ndel w\n"),
    ("filter set and reset at top level", "a = np.arange(3.0)",
     "import warnings\nq = np.log(a)\nwarnings.simplefilter('ignore')\nr = a / 0\nwarnings.simplefilter('default')\n"),
    # numpy.random Generator / RandomState methods on traced arrays
    ("rng shuffle", "a = np.arange(10.0)", "rng.shuffle(a)\nr = a[:3]\n"),
    ("rng shuffle computed", "a = np.arange(10.0)", "b = a * 2\nrng.shuffle(b)\nr = b + 1\n"),
    ("rng random out", "o = np.empty(3)", "rng.random(out=o)\nr = o * 2\n"),
    ("rng standard_normal out computed", "o = np.full(3, 5.0)", "o *= 0\nrng.standard_normal(out=o)\nr = o + 1\n"),
    ("rng permuted out", "a = np.arange(10.0)", "rng.permuted(a, out=a)\nr = a.sum()\n"),
    ("randomstate shuffle", "a = np.arange(10.0)\nrs = np.random.RandomState(3)", "rs.shuffle(a)\nr = a + 0\n"),
    ("cell generator shuffle", "a = np.arange(10.0)",
     "g = np.random.default_rng(4)\nsame = np.random.default_rng(g) is g\nok = isinstance(g, np.random.Generator)\n"
     "g.shuffle(a)\nr = a * 1\n"),
]
CASES = [Case(name=n, setup=s, cell=c) for n, s, c in CELLS]


@pytest.fixture(scope="module")
def harness():
    return Harness()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_warnings_as_plain_execution(harness, case):
    assert_as_plain(harness, case, SETUP)
