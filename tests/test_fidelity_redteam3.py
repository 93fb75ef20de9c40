"""Fidelity red team, third round: notebook cells the corpus, the random cells and the
second round (test_fidelity_redteam2.py) cover thinly, each run plainly and under
`%%fuse` by the fidelity harness (tests/fidelity.py; bound arrays' layout and flags too).
Some cases are a notebook's sequence of cells (`Case.before`): a function, closure,
generator or object made in a fused cell and used by a later one, a cell run twice.

Classes of difference this round found, and fixed:

- a traced array kept by a function's default argument (`def f(v, w=x * 2)`), a
  functools.partial, a bound method (`f = (x * 2).sum`), an object with __slots__, a
  collections.deque or a suspended generator's locals stayed a tracer after the cell (a
  later cell computed with it, wrong values or fuselab's type), or the cell was refused
  (bind.py: these holders are found and updated);
- `iter(x)` left unfinished was a generator over the tracer (`type` said generator; a
  later `next` read it): now an iterator object whose array the binder replaces (core.py);
- a new name read by a function, lambda or generator expression of the cell (`t = x * 2;
  f = lambda: t + 1`) was fused away: a later call raised NameError (cellinfo.py);
- `m.imag` of a real array was writeable (NumPy: read-only zeros; a write raises);
- the user's array held by another object too (a list, an attribute, a dict, a default
  argument, a closure: STALE) was read there stale after a traced in-place update (the
  update was written back only after the run), and an untraced write through that
  reference after a traced read changed what the earlier read saw: such arrays are
  found at the start of the trace, their traced updates written into them at once, and
  their contents as read kept and compared before later reads (fuselab/trace/held.py).

Left as strict xfails (KNOWN): an __array__ of the cell's class returning a tracer, np.ma's
data of a traced array being read-only, a suspended zip, an as_strided window's base updated.
"""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import Case, assert_as_plain, named_cases, params  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402
from test_fidelity_realrun import LayoutHarness  # noqa: E402


@pytest.fixture(scope="module")
def harness():
    return LayoutHarness()


# -- exceptions part-way, try / except / else / finally ------------------------------

EXCEPTIONS = [
    ('try raise keeps earlier', "try:\n    a = x * 2\n    raise ValueError('bad')\nexcept ValueError as ex:\n    msg = str(ex)\nr = a + 1"),
    ('try else finally', "try:\n    a = x.sum()\nexcept Exception:\n    a = None\nelse:\n    b2 = a * 2\nfinally:\n    c = x.max()"),
    ('except broadcast error', "try:\n    r = x + m\nexcept ValueError as ex:\n    msg = str(ex)\n    r = None"),
    ('raise in loop caught', "out = []\nfor row in m:\n    try:\n        if row.sum() > 0:\n            raise KeyError(row.argmax())\n        out.append(row * 2)\n    except KeyError as ex:\n        out.append(ex.args[0])"),
    ('errstate raise caught', "with np.errstate(divide='raise'):\n    try:\n        r = x / 0\n    except FloatingPointError as ex:\n        msg = str(ex)\n        r = None"),
    ('inplace then caught index error', "x *= 2\ntry:\n    x[100] = 1\nexcept IndexError as ex:\n    msg = str(ex)\ns = x.sum()"),
    ('func raises type error caught', "def f(a):\n    if a.ndim != 1:\n        raise TypeError('need 1d')\n    return a * 2\ntry:\n    r = f(m)\nexcept TypeError as ex:\n    r = f(x)\n    msg = ex.args[0]"),
    ('finally inplace', "try:\n    x += 1\nfinally:\n    y = x * 2"),
    ('int of array caught', "try:\n    int(x)\nexcept TypeError as ex:\n    err = type(ex).__name__\n    msg = str(ex)"),
    ('assert fails', "assert x.shape == (8,)\ny = x * 2\nassert y.sum() > 1e9, 'too small'"),
    ('assert passes', "assert x.shape == (8,), x.shape\ny = x * 2\nassert np.isfinite(y).all()"),
    ('custom exception with scalar', "class BadData(Exception):\n    pass\ntry:\n    raise BadData(x.min())\nexcept BadData as ex:\n    val = ex.args[0]"),
    ('exception holding array', "try:\n    raise ValueError(x * 2)\nexcept ValueError as ex:\n    arr = ex.args[0]"),
    ('exception object bound', "try:\n    raise ValueError(x[:2] + 1)\nexcept ValueError as ex:\n    saved = ex\nr = saved.args[0] * 2"),
    ('ex name deleted after except', "try:\n    1 / 0\nexcept ZeroDivisionError as ex:\n    y = x + 1\nr = 'ex' in globals()"),
    ('nested try reraise', "try:\n    try:\n        r = m @ x\n    except ValueError:\n        r = None\n        raise\nexcept ValueError as ex2:\n    msg = str(ex2)"),
    ('contextlib suppress', "from contextlib import suppress\nwith suppress(IndexError):\n    y = x * 2\n    z2 = x[100]\nr = y.sum()"),
    ('warnings as error caught', "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('error')\n    try:\n        r = np.log(x)\n    except RuntimeWarning as w:\n        msg = str(w)\n        r = None"),
    ('try on linalg error', "try:\n    r = np.linalg.inv(np.zeros((2, 2)))\nexcept np.linalg.LinAlgError as ex:\n    r = np.eye(2)\n    msg = str(ex)"),
    ('except tuple', "try:\n    r = x.reshape(3, 3)\nexcept (TypeError, ValueError) as ex:\n    r = x.reshape(2, 4)\n    msg = str(ex)"),
    ('user raise after inplace', "x[0] = 100\ny = x * 2\nraise RuntimeError('stop here')"),
    ('user raise after print', "print(x.sum())\nraise RuntimeError('stop')"),
    ('error after append', "acc = []\nfor row in m:\n    acc.append(row.sum())\n    if len(acc) == 2:\n        raise StopIteration"),
    ('keyboardinterrupt like', "r = x * 2\nraise SystemError('sys')"),
    ('try in function returns early', "def safe_div(a, b2):\n    try:\n        with np.errstate(divide='raise'):\n            return a / b2\n    except FloatingPointError:\n        return np.zeros_like(a)\nr = safe_div(x, 0)\ns = safe_div(x, 2)"),
    ('finally return override', "def f(a):\n    try:\n        return a * 2\n    finally:\n        a += 1\nr = f(x)"),
    ('except else returns', "def f(a):\n    try:\n        v = a.sum()\n    except Exception:\n        return None\n    else:\n        return v * 2\nr = f(m)"),
    ('raise from', "try:\n    try:\n        r = x[20]\n    except IndexError as ex:\n        raise KeyError('k') from ex\nexcept KeyError as ex2:\n    cause = type(ex2.__cause__).__name__"),
    ('exception traceback frame names', "try:\n    r = np.zeros(3) + np.zeros(4)\nexcept ValueError as ex:\n    n = ex.__traceback__ is not None"),
    ('zero division python scalar', "try:\n    r = 1 / int(x.size - 8)\nexcept ZeroDivisionError as ex:\n    r = float('inf')\n    msg = str(ex)"),
    ('stopiteration next', "it = iter([x, m])\na1 = next(it)\na2 = next(it)\ntry:\n    a3 = next(it)\nexcept StopIteration:\n    a3 = None"),
    ('exception group', "try:\n    raise ExceptionGroup('g', [ValueError(x.sum()), TypeError('t')])\nexcept* ValueError as eg:\n    n = len(eg.exceptions)\nexcept* TypeError:\n    t = 1"),
]

# -- del, global, nonlocal, functions and classes ------------------------------------

DEFINITIONS = [
    ('del new name', "y = x * 2\ndel y"),
    ('del then alias lives', "y = x * 2\nz2 = y\ndel y\nr = z2 + 1"),
    ('del rebind', "y = x * 2\ndel y\ny = m.sum()"),
    ('del list item of arrays', "L = [x, m, x * 2]\ndel L[1]\nr = L[1] + 1"),
    ('del dict item', "D = {'a': x, 'b': x * 2}\ndel D['a']\nr = list(D)"),
    ('del undefined error', "y = x * 2\ndel nosuchname"),
    ('del attr', "obj.a = x * 2\nobj.b = m\ndel obj.a"),
    ('global counter', "counter = 0\ndef inc(a):\n    global counter\n    counter += int(a.sum() > 0)\n    return a\nfor row in m:\n    inc(row)"),
    ('global array rebind in func', "def norm_x():\n    global x\n    x = x / np.abs(x).max()\nnorm_x()\nr = x.max()"),
    ('global new array in func', "def make():\n    global made\n    made = m * 2\nmake()\nr = made.sum()"),
    ('nonlocal accumulate', "def outer(a):\n    total = 0\n    def add(v):\n        nonlocal total\n        total = total + v\n    for row in a:\n        add(row.sum())\n    return total\nr = outer(m)"),
    ('class scaler', "class Scaler:\n    def __init__(self, a):\n        self.mu = a.mean(axis=0)\n        self.sd = a.std(axis=0)\n    def __call__(self, a):\n        return (a - self.mu) / self.sd\ns = Scaler(m)\nr = s(m)"),
    ('class attribute array', "class C:\n    w = x * 2\n    n = len(x)\nr = C.w + C.n"),
    ('class with slots', "class P:\n    __slots__ = ('a', 'b')\n    def __init__(self, a):\n        self.a = a\n        self.b = a * 2\np = P(x)\nr = p.b"),
    ('class staticmethod classmethod', "class K:\n    scale = 3\n    @staticmethod\n    def f(a):\n        return a + 1\n    @classmethod\n    def g(cls, a):\n        return a * cls.scale\nr = K.f(x) + K.g(x)"),
    ('class dunder add', "class V:\n    def __init__(self, a):\n        self.a = a\n    def __add__(self, o):\n        return V(self.a + o.a)\n    def __repr__(self):\n        return f'V({self.a.sum():.3f})'\nv = V(x) + V(x)\nr = repr(v)"),
    ('class array_ufunc passthrough', "class Wrap:\n    def __init__(self, a):\n        self.a = a\n    def __array__(self, dtype=None, copy=None):\n        return self.a\nr = np.exp(Wrap(x))\ns = np.asarray(Wrap(x)) is x"),
    ('decorator wraps', "import functools\ndef twice(f):\n    @functools.wraps(f)\n    def g(a):\n        return f(f(a))\n    return g\n@twice\ndef sq1(a):\n    return a * a + 1\nr = sq1(x)\nname = sq1.__name__"),
    ('decorator with args', "def scaled(k):\n    def deco(f):\n        def g(a):\n            return f(a) * k\n        return g\n    return deco\n@scaled(2.5)\ndef f(a):\n    return a - 1\nr = f(m)"),
    ('lru_cache unhashable', "from functools import lru_cache\n@lru_cache\ndef f(a):\n    return a * 2\nr = f(x)"),
    ('hash of array error', "r = hash(x)"),
    ('array as dict key error', "D = {x: 1}"),
    ('set of arrays error', "S = {x, m}"),
    ('array in list', "L = [m, x]\nr = x in L"),
    ('array in list compare error', "L = [m * 1, x]\nr = x in L"),
    ('lambda map', "f = lambda a, k=2: a ** k\nr = list(map(f, [x, x[:3]]))"),
    ('lambda sorted rows', "rows = sorted(m, key=lambda r: r.sum())\nr = np.stack(rows)"),
    ('max rows key', "best = max(m, key=lambda r: r.max())\nr = best * 1"),
    ('recursive function', "def power(a, n):\n    return a if n == 1 else a * power(a, n - 1)\nr = power(x, 4)"),
    ('functools partial', "from functools import partial\nscale = partial(np.multiply, 3.0)\nr = scale(x)"),
    ('functools reduce arrays', "from functools import reduce\nr = reduce(np.add, [x, x * 2, x * 3])"),
    ('operator methodcaller', "import operator\nf = operator.methodcaller('sum', axis=0)\nr = f(m)\ns = operator.itemgetter(0, 2)(x)"),
    ('function attribute array', "def f():\n    return f.w * 2\nf.w = x + 1\nr = f()"),
    ('generator function', "def gen(a):\n    for v in a:\n        yield v * 2\nr = list(gen(x))"),
    ('generator send', "def acc():\n    tot = 0\n    while True:\n        v = yield tot\n        tot = tot + v\ng = acc()\nnext(g)\ng.send(x[0])\nr = g.send(x[1])"),
    ('yield from rows', "def rows(a):\n    yield from a\n    yield a.sum(axis=0)\nr = [q.sum() for q in rows(m)]"),
    ('generator expression sum', "r = sum(row.max() for row in m)"),
    ('any all over arrays', "r = any(row.sum() > 0 for row in m)\ns = all(v > -10 for v in x)"),
    ('nested comprehension 2d', "r = [[v * 2 for v in row] for row in m[:2]]"),
    ('comprehension filter', "r = [v for v in x if v > 0]\ns = np.array(r, dtype=np.float32)"),
    ('dict comprehension stats', "r = {k: getattr(m, k)() for k in ('min', 'max', 'mean')}"),
    ('set comprehension rounded', "r = {int(v) for v in np.round(x)}"),
    ('walrus loop', "out = []\nfor row in m:\n    if (s := row.sum()) > 0:\n        out.append(s)\nr = sum(out)"),
    ('walrus size', "if (n := x.size) > 4:\n    y = x[:n // 2]"),
    ('walrus array', "if (y := x * 2).sum() > -100:\n    z2 = y + 1"),
    ('walrus comprehension array', "r = [t for row in m if (t := row * 2).max() > 0]"),
]

# -- match, unpacking, truth of arrays -----------------------------------------------

CONTROL = [
    ('match ndim', "match x.ndim:\n    case 1:\n        y = x * 2\n    case _:\n        y = None"),
    ('match shape', "match m.shape:\n    case (n,):\n        y = np.zeros(n)\n    case (r0, c0):\n        y = np.zeros((c0, r0))"),
    ('match class ndarray', "match x:\n    case np.ndarray():\n        kind = 'arr'\n    case _:\n        kind = 'other'"),
    ('match sequence array', "match m:\n    case [a1, a2, *rest]:\n        r = 'seq'\n    case _:\n        r = 'nope'"),
    ('match dtype kind', "match x.dtype.kind:\n    case 'f':\n        y = x.astype(np.float64)\n    case 'i':\n        y = x"),
    ('match scalar value', "match int(i8.argmax()):\n    case 0 | 1:\n        r = 'low'\n    case k if k > 5:\n        r = k\n    case _:\n        r = None"),
    ('match guard array', "match x.shape:\n    case (n,) if x.sum() > 0:\n        r = 'pos'\n    case _:\n        r = 'neg'"),
    ('match mapping', "cfg = {'op': 'scale', 'k': x.max()}\nmatch cfg:\n    case {'op': 'scale', 'k': k}:\n        r = x / k"),
    ('star unpack 1d', "first, *rest = x"),
    ('star unpack rows', "a1, *mid, a2 = m\nr = a1 + a2"),
    ('star unpack tail', "*init, last = x[:3]\nr = last * 2"),
    ('unpack shape', "n0, n1 = m.shape\ny = np.zeros((n1, n0))"),
    ('unpack wrong count', "a1, a2 = x"),
    ('unpack 2 rows', "p, q = m[:2]\np += 1"),
    ('swap rows tuple', "m[0], m[1] = m[1], m[0]"),
    ('swap rows copy', "m[0], m[1] = m[1].copy(), m[0].copy()"),
    ('swap names', "x, m = m, x"),
    ('and on arrays error', "r = x and m"),
    ('or on size-1 array', "r = x[:1] or 5"),
    ('and on 0d', "a0 = np.array(2.0)\nr = a0 and x\ns = np.array(0) or m"),
    ('not of empty error', "r = not e"),
    ('empty truth error', "if e:\n    r = 1"),
    ('or on empty error', "r = e or 3"),
    ('size-1 2d truth', "r = bool(m[:1, :1])\ns = 1 if x[:1] else 0"),
    ('not of scalar', "r = not x.sum()\ns = not (x > 100).any()"),
    ('chained compare scalars', "r = x.min() <= x.mean() <= x.max()"),
    ('chained compare shapes', "r = 0 < x.size < 100 and m.ndim == 2"),
    ('chained compare array error', "r = 0 < x < 1"),
    ('ternary on array error', "r = 1 if x > 0 else 0"),
    ('ternary on any', "r = x * 2 if (x > 0).any() else x"),
    ('while on scalar', "v = x.copy()\nn = 0\nwhile np.abs(v).max() > 0.1:\n    v = v / 2\n    n += 1"),
    ('for else with break', "for i, row in enumerate(m):\n    if row.min() < -1:\n        hit = i\n        break\nelse:\n    hit = -1"),
    ('iterate 2d rows cols', "acc = 0\nfor row in m:\n    for v in row:\n        acc = acc + v"),
    ('iterate 0d error', "for v in np.array(3.0):\n    pass"),
    ('iterate empty', "n = 0\nfor v in e:\n    n += 1\nr = list(e)"),
    ('zip arrays', "r = [a1 * a2 for a1, a2 in zip(x, x[::-1])]"),
    ('enumerate modify rows', "for i, row in enumerate(m):\n    row *= i"),
    ('range len loop', "for i in range(len(x)):\n    x[i] = x[i] ** 2"),
    ('reversed array', "r = list(reversed(x[:3]))\ns = [v for v in reversed(m)][0]"),
    ('sorted array', "r = sorted(x)\ns = sorted(x, reverse=True)[:2]"),
    ('min max builtins', "r = max(x)\ns = min(i8)\nt = max(x, key=abs)"),
    ('sum builtin 2d', "r = sum(m)\ns = sum(x, 10)"),
    ('len of various', "r = (len(x), len(m), len(m.T), len(e))"),
    ('len 0d error', "r = len(np.array(5.0))"),
    ('list of array', "r = list(m)\nr[0][0] = 99"),
    ('tuple of array', "r = tuple(x[:3])"),
]

# -- floating-point state, warnings, context managers --------------------------------

FPSTATE = [
    ('printoptions print', "with np.printoptions(precision=2, suppress=True):\n    print(m)\n    s = str(x)\nt = str(x)"),
    ('printoptions repr', "with np.printoptions(precision=1):\n    r = repr(x * 2)"),
    ('set_printoptions and back', "np.set_printoptions(precision=3)\nprint(x * 2)\nnp.set_printoptions(precision=8)"),
    ('seterr ignore', "old = np.seterr(all='ignore')\nr = x / 0\ns = np.log(x)\nnp.seterr(**old)"),
    ('seterr raise caught', "old = np.seterr(divide='raise')\ntry:\n    r = x / 0\nexcept FloatingPointError:\n    r = None\nnp.seterr(**old)"),
    ('seterr raise uncaught', "old = np.seterr(divide='raise')\ntry:\n    r = np.ones(2) + 1\nfinally:\n    np.seterr(**old)\ns = r / 0"),
    ('geterr read', "with np.errstate(over='ignore'):\n    st = np.geterr()['over']\n    r = h * 1e4\nst2 = np.geterr()['over']"),
    ('errstate invalid ignore', "with np.errstate(invalid='ignore'):\n    r = np.sqrt(x)\ns = np.sqrt(x)"),
    ('errstate then value used later', "with np.errstate(divide='ignore'):\n    r = 1 / x\ns = r * 0"),
    ('errstate all raise overflow', "with np.errstate(all='raise'):\n    try:\n        r = np.exp(x * 1000)\n    except FloatingPointError as ex:\n        msg = str(ex)"),
    ('errstate call', "def handler(kind, flag):\n    log.append(kind)\nlog = []\nwith np.errstate(all='call', call=handler):\n    r = x / 0\n    s = np.log(-abs(x))"),
    ('errstate print', "with np.errstate(all='print'):\n    r = x / 0"),
    ('errstate log unset warn', "with np.errstate(divide='ignore'):\n    pass\nr = x / 0"),
    # (the records themselves name the cell's file and line, which the %%fuse line moves)
    ('catch_warnings record', "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n    r = np.log(x)\nn = len(w)\nmsg = str(w[0].message)\ndel w"),
    ('catch_warnings record then use', "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n    r = x / 0\n    s = r + 1\ncats = [str(q.message) for q in w]\ndel w"),
    ('catch_warnings ignore', "import warnings\nwith warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n    r = np.log(x)\ns = np.log(x)"),
    ('filterwarnings in cell', "import warnings\nwarnings.filterwarnings('ignore', message='divide by zero')\nr = x / 0\ns = np.log(x)\nwarnings.resetwarnings()\nwarnings.simplefilter('default')"),
    ('warn with array message', "import warnings\nwarnings.warn(f'max is {x.max():.3f}')\nr = x * 2"),
    ('warn user category', "import warnings\nif (x < 0).any():\n    warnings.warn('negative values', UserWarning)\nr = np.abs(x)"),
    ('warn in loop once', "import warnings\nfor row in m:\n    if row.min() < 0:\n        warnings.warn('neg row')\nr = m * 1"),
    ('warnings showwarning count', "import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n    for k in range(3):\n        r = x / 0\nn = len(w)\ndel w"),
    ('testing assert_allclose', "np.testing.assert_allclose(x * 2, x + x)\nr = True"),
    ('testing assert fails', "np.testing.assert_array_equal(x, x + 1)"),
    ('allclose isclose', "r = np.allclose(x, x + 1e-9)\ns = np.isclose(x, 0).sum()\nt = np.array_equal(m, m.copy())"),
]

# -- NEP 50 promotion, overflow, division by zero ------------------------------------

PROMOTION = [
    ('f32 plus big py float', "r = x + 1e300"),
    ('f32 times py complex', "r = x * 2j"),
    ('f32 times np float64', "r = x * np.float64(2)\ns = x * np.float32(2)"),
    ('int8 plus py int oob', "r = i8 + 200"),
    ('int8 plus py int in range', "r = i8 + 100\ns = i8 * 127"),
    ('uint8 times py float', "r = u8 * 2.0\ns = u8 / 2\nt = u8 // 2.5"),
    ('uint8 minus py int negative', "r = u8 - 1\ns = u8 + (-1)"),
    ('int32 plus np int64', "r = i32 + np.int64(1)\ns = i32 + np.int8(1)"),
    ('float16 times big', "r = h * 1e5\ns = h + 70000"),
    ('float16 py int oob', "r = h + 10**6"),
    ('bool plus py int', "r = b + 1\ns = b * 2.5\nt = b & True"),
    ('bool plus np bool', "r = b + np.bool_(True)\ns = b | np.True_"),
    ('sum type then py', "s = x.sum()\nr = s + 1\nt = s * 2.0\nq = type(r).__name__"),
    ('np scalar plus py float', "r = np.float32(1) + 1.0\ns = np.float16(1) + 1e6\nt = np.int8(1) + 1.5"),
    ('int8 scalar overflow warn', "r = i8[0] + np.int8(127)\ns = np.int8(100) * np.int8(3)"),
    ('int array overflow silent', "r = i8 * 100\ns = i32 ** 5"),
    ('int scalar pow overflow', "r = np.int64(10) ** 20"),
    ('int floor div zero', "r = i32 // 0\ns = i32 % 0"),
    ('int scalar floordiv zero', "r = np.int32(5) // 0\ns = np.int32(5) % np.int32(0)"),
    ('float div zero scalar', "r = x / np.float32(0)\ns = x[0] / 0"),
    ('int true div zero', "r = i32 / 0\ns = np.int32(0) / 0"),
    ('int neg pow error', "r = i32 ** -1"),
    ('int scalar neg pow py', "r = np.int64(2) ** -2"),
    ('uint64 plus int64', "u = np.arange(3, dtype=np.uint64)\nr = u + np.arange(3)\ns = u + 1\nt = u - np.int64(1)"),
    ('uint64 minus py neg error', "u = np.arange(3, dtype=np.uint64)\nr = u + (-1)"),
    ('int64 plus huge py int', "r = np.arange(3) + 2**63"),
    ('complex64 times py float', "c = x.astype(np.complex64)\nr = c * 1.5\ns = c * np.float64(1.5)\nt = c + 1j"),
    ('longdouble', "r = x.astype(np.longdouble) + 1\ns = r.dtype.itemsize"),
    ('int div py float', "r = i32 / 2.0\ns = i8 / np.float16(2)"),
    ('result_type checks', "r = np.result_type(x, 1.0)\ns = np.result_type(i8, 300) if False else np.result_type(i8, 3)\nt = np.promote_types(x.dtype, np.int16)"),
    ('can_cast', "r = np.can_cast(x, np.float16)\ns = np.can_cast(i8.dtype, np.int64)"),
    ('mixed list array', "r = np.array([x[0], 1, 2.5])\ns = np.array([i8[0], 1])"),
    ('python ints to uint8 array', "r = u8 + np.uint8(250)\ns = u8.astype(np.int16) + 250"),
    ('abs of int8 min', "a = np.array([-128, 5], dtype=np.int8)\nr = abs(a)\ns = -a\nt = np.abs(a[0])"),
    ('float to int cast', "r = (x * 1000).astype(np.int8)\ns = x.astype(np.int64)"),
    ('int to float16 overflow', "r = i32.astype(np.float16) * 100"),
    ('round half even', "a = np.array([0.5, 1.5, 2.5, -0.5])\nr = np.round(a)\ns = round(a[2])\nt = round(np.float64(2.675), 2)"),
    ('bitwise on ints', "r = i8 & 0x0F\ns = u8 ^ 0xFF\nt = ~i32\nq = i32 << 2"),
    ('shift by large', "r = i32 >> 40\ns = np.int32(1) << 40"),
    ('comparisons mixed', "r = i8 == 200\ns = u8 < -1\nt = x == 1e300"),
]

# -- views, overlapping writes, out= aliasing, fancy assignment ----------------------

VIEWS = [
    ('overlap shift add', "x[1:] += x[:-1]"),
    ('overlap shift add other way', "x[:-1] += x[1:]"),
    ('overlap rows sub', "m[1:] -= m[:-1]"),
    ('overlap out shifted', "np.add(x[:-1], x[1:], out=x[1:])"),
    ('reverse assign', "x[:] = x[::-1]"),
    ('reverse inplace add', "x += x[::-1]"),
    ('transpose inplace add', "sq += sq.T"),
    ('out transposed alias', "np.add(sq, sq.T, out=sq)"),
    ('transpose assign', "sq[:] = sq.T"),
    ('shift assign expr', "x[1:] = x[:-1] * 2"),
    ('shift assign then read', "x[2:] = x[:-2] + x[2:]\nr = x.sum()"),
    ('overlap step', "x[::2] = x[1::2] + x[::2]"),
    ('cumulative via loop', "for i in range(1, len(x)):\n    x[i] += x[i - 1]"),
    ('out aliases input', "np.multiply(x, 2, out=x)\nnp.exp(m, out=m)"),
    ('out view of input', "np.negative(m[:, 0], out=m[:, 1])"),
    ('inplace chain with views', "v = m[:2]\nw = m[1:3]\nv += 1\nw *= 2\nr = m.sum()"),
    ('fancy assign repeated', "x[[0, 0, 1]] += 1"),
    ('fancy assign repeated values', "x[[0, 0]] = [1, 2]"),
    ('fancy 2d repeated', "m[[0, 0], [1, 1]] += 5"),
    ('add.at repeated', "np.add.at(x, [0, 0, 1], 1)\nnp.subtract.at(m, (0, [1, 1]), 2.5)"),
    ('maximum.at', "np.maximum.at(x, [0, 1, 0], [5, -5, 7])"),
    ('mask assign expr', "x[x > 0] = x[x > 0] * 2"),
    ('mask assign scalar from array', "x[x < 0] = x.mean()"),
    ('mask add inplace', "x[b[:8]] += 1"),
    ('mask 2d assign row', "m[m[:, 0] > 0] = 0"),
    ('where into view', "np.copyto(x, 0, where=x < 0)"),
    ('putmask', "np.putmask(x, x > 0, x * 10)"),
    ('place', "np.place(x, x < 0, [1, 2])"),
    ('real imag views', "c = m.astype(complex)\nc.imag[:] = 1\nc.real[0] = 5\nr = c.sum()"),
    ('real of float is view', "r = m.real\nr[0, 0] = 7\ns = m[0, 0]"),
    ('imag of float readonly', "v = m.imag\nv[0, 0] = 1"),
    ('imag of float values', "v = m.imag\nr = v.sum()\nw = v.flags.writeable"),
    ('reshape view write', "r = m.reshape(-1)\nr[0] = 100\ns = m[0, 0]"),
    ('reshape copy write', "r = m.T.reshape(-1)\nr[0] = 100\ns = m[0, 0]"),
    ('ravel T copy', "r = m.T.ravel()\nr[:] = 0\ns = m.sum()"),
    ('ravel view', "r = m.ravel()\nr[:3] = 0\ns = m[0]"),
    ('flatten copy', "r = m.flatten()\nr[:] = 0\ns = m.sum()"),
    ('flat setitem', "m.flat[3] = 1\nm.flat[[0, 5]] = 2\nr = m.flat[4]"),
    ('swapaxes write', "t = m.swapaxes(0, 1)\nt[0] = 1\nr = m[:, 0]"),
    ('moveaxis write', "t3 = np.zeros((2, 3, 4))\nt = np.moveaxis(t3, 0, -1)\nt[0, 0] = 5\nr = t3.sum()"),
    ('as_strided windows read', "from numpy.lib.stride_tricks import as_strided\nw = as_strided(x, shape=(6, 3), strides=(4, 4))\nr = w.sum(axis=1)"),
    ('as_strided then write base', "from numpy.lib.stride_tricks import as_strided\nw = as_strided(x, shape=(6, 3), strides=(4, 4))\nr = w.sum(axis=1)\nx[0] = 100\ns = w[0, 0]"),
    ('broadcast_to readonly', "r = np.broadcast_to(x, (3, 8))\nw = r.flags.writeable\ns = r.sum(axis=0)"),
    ('broadcast_to then write base', "r = np.broadcast_to(x, (2, 8))\nx[0] = 9\ns = r[1, 0]"),
    ('view base chain', "v = m[1:][:, ::2]\nr = v.base is m\ns = np.shares_memory(v, m)"),
    ('view of view write', "v = m[::2]\nw = v[:, 1:3]\nw[:] = -1\nr = m.sum()"),
    ('newaxis view write', "v = x[None, :]\nv[0, 0] = 42\nr = x[0]"),
    ('diagonal via strides', "r = m.ravel()[::7]\ns = r.copy()"),
    ('setitem with ellipsis', "m[...] = 0\nx[...] = x * 2"),
    ('setitem broadcast row', "m[:] = x[:6]"),
    ('setitem from list', "x[:3] = [1, 2, 3]\nm[0] = range(6)"),
    ('setitem wrong shape error', "m[:] = x"),
    ('setitem nan into int', "i32[0] = np.nan"),
    ('setitem float into int truncates', "i32[:2] = [1.9, -1.9]\ni8[0] = 3.7"),
    ('setitem oob int8', "i8[0] = 300"),
    ('setitem complex into float', "x[0] = 1 + 2j"),
    ('view dtype bytes', "r = x.view(np.uint8)\ns = r.shape"),
    ('inplace div int error', "i32 /= 2"),
    ('inplace float into int', "i32 += 1.5"),
    ('inplace casting same kind', "x += m[0, :8] if False else np.arange(8)"),
    ('inplace broadcasting grow error', "x += m"),
]

# -- object, string, datetime, structured, masked arrays with traced ones ----------

DTYPES = [
    ('astype str', "s = x[:3].astype(str)\nr = s[0]"),
    ('char upper', "labels = np.array(['a', 'bb'])\nr = np.char.upper(labels)\nn = np.char.str_len(labels) + x[:2]"),
    ('datetime plus arange', "t = np.datetime64('2024-01-01') + np.arange(3)\nr = t[1]"),
    ('datetime arange diff', "dates = np.arange('2024-01', '2024-03', dtype='datetime64[D]')\nr = dates[::7]\ndelta = np.diff(dates[:3])"),
    ('timedelta times ints', "td = np.timedelta64(1, 'h') * i32[:3]\nr = td.astype('timedelta64[m]')"),
    ('datetime compare', "t = np.datetime64('2024-01-01') + np.arange(5)\nr = t[t > np.datetime64('2024-01-02')]"),
    ('structured fill', "st = np.zeros(3, dtype=[('a', 'f8'), ('b', 'i4')])\nst['a'] = x[:3]\nst['b'] = i32[:3]\nr = st['a'] * 2"),
    ('structured field view write', "st = np.zeros(3, dtype=[('a', 'f8'), ('b', 'i4')])\nf = st['a']\nf += x[:3]\nr = st[0]"),
    ('record access', "st = np.array([(1.0, 2)], dtype=[('a', 'f8'), ('b', 'i4')])\nr = st[0]['a'] + x[0]"),
    ('object array arithmetic', "o = x[:3].astype(object)\nr = o * 2\ns = r[0]"),
    ('object array mixed', "o = np.array([1, 'a', None], dtype=object)\nr = o[:2]\ns = o[0] + x[0]"),
    ('object array of arrays sum', "o = np.empty(2, dtype=object)\no[0] = x\no[1] = x * 2\nr = o.sum()"),
    ('fraction times array', "from fractions import Fraction\nr = x[:2] * Fraction(1, 2)"),
    ('decimal times array error', "from decimal import Decimal\nr = x * Decimal('1.5')"),
    ('masked mean', "mx = np.ma.masked_array(x, mask=x < 0)\nr = mx.mean()\nf = mx.filled(0)"),
    ('masked plus traced', "mx = np.ma.masked_less(x, 0)\nr = mx + x * 2\ns = r.mask.sum()"),
    ('masked invalid', "y = np.log(x)\nmy = np.ma.masked_invalid(y)\nr = my.sum()"),
    ('masked where', "mx = np.ma.masked_where(m > 0, m)\nr = mx.max(axis=0)\ns = np.ma.getdata(mx)"),
    ('matrix ops', "M = np.asmatrix(sq)\nr = M * M\ns = M.I"),
    ('bytes array', "r = np.frombuffer(x.tobytes(), dtype=np.float32) + 1"),
    ('void view', "r = m.view('V8')\ns = r.shape"),
    ('string compare', "names = np.array(['a', 'b', 'a'])\nr = x[:3][names == 'a']"),
    ('unique with counts', "vals, counts = np.unique(i8 % 3, return_counts=True)\nr = dict(zip(vals.tolist(), counts.tolist()))"),
    ('histogram', "hist, edges = np.histogram(x, bins=4)\nr = hist.sum()"),
    ('bincount', "r = np.bincount(u8 % 5)\ns = np.bincount(u8 % 5, weights=x[:1].repeat(10))"),
    ('searchsorted digitize', "edges = np.linspace(-2, 2, 5)\nr = np.digitize(x, edges)\ns = np.searchsorted(edges, x)"),
    ('pandas like groupby', "keys = i8 % 3\nr = {int(k): x[:0].sum() + i32[keys == k].sum() for k in np.unique(keys)}"),
    ('complex abs angle', "c = x + 1j * x[::-1]\nr = np.abs(c)\ns = np.angle(c)\nt = c.conj().imag"),
    ('complex sort', "c = x[:4] + 1j\nr = np.sort_complex(c)"),
    ('float16 python scalar display', "h[0]"),
    ('int8 view uint8 wrap', "r = i8.view(np.uint8) + 1"),
    ('byteorder ops', "r = be + 1\ns = be.byteswap().view(be.dtype.newbyteorder())\nt = be.astype('<f4')"),
    ('byteorder inplace', "be *= 2\nr = be.dtype.str"),
]

# -- empty and 0-d arrays, scalar results and conversions -----------------------------

SCALARS = [
    ('empty reductions', "r = e.sum()\ns = e.prod()\nt = e.any()\nq = e.all()"),
    ('empty max error', "r = e.max()"),
    ('empty argmax error', "r = e.argmax()"),
    ('empty mean warns', "r = e.mean()"),
    ('empty 2d sum axis', "r = np.zeros((0, 3)).sum(axis=0)\ns = np.zeros((0, 3)).max(axis=1)"),
    ('empty 2d max axis0 error', "r = np.zeros((0, 3)).max(axis=0)"),
    ('empty matmul', "r = e @ e\ns = np.zeros((2, 0)) @ np.zeros((0, 3))"),
    ('empty reshape', "r = e.reshape(0, 5)\ns = e.reshape(-1, 3)"),
    ('empty reshape ambiguous error', "r = e.reshape(-1, 0)"),
    ('empty concat', "r = np.concatenate([e, x.astype(float)])\ns = np.hstack([e, e])"),
    ('empty ops dtype', "r = e.astype(np.int8) + 1\ns = e > 0\nt = e[e > 0]"),
    ('zero-size slice math', "r = x[5:2] * 2\ns = m[:, 3:3].sum(axis=1)"),
    ('0d inplace add', "a0 = np.array(5)\na0 += 1\nr = a0[()]\ns = a0[...]"),
    ('0d times array', "a0 = np.array(2.5)\nr = a0 * x\ns = a0 * 2\nt = type(s).__name__"),
    ('0d plus 0d scalar', "r = np.array(3) + np.array(4)\ns = -np.array(3.0)\nt = np.exp(np.array(1.0))"),
    ('0d index empty tuple', "r = np.array(1.0)[()]\ns = np.array(1.0)[...]\nt = np.array(1.0)[None]"),
    ('0d view of matrix element', "r = m[0, 0, ...]\nr[...] = 5\ns = m[0, 0]"),
    ('ellipsis int index gives 0d', "r = x[..., 0]\nt = type(r).__name__"),
    ('0d setitem', "a0 = np.array(1.0)\na0[()] = 7\na0[...] = a0 * 2\nr = float(a0)"),
    ('0d astype', "a0 = np.array(3.7)\nr = a0.astype(int)\ns = a0.astype(np.float32)"),
    ('0d reductions', "a0 = np.array(3.0)\nr = a0.sum()\ns = a0.max()\nt = a0.mean(keepdims=True)"),
    ('0d iteration tolist', "a0 = np.array(3.0)\nr = a0.tolist()\ns = a0.item()\nt = a0.shape"),
    ('0d comparisons', "a0 = np.array(3.0)\nr = a0 > 2\ns = bool(a0 > 2)\nt = a0 == x[0]"),
    ('0d in format', "a0 = np.array(3.14159)\nr = f'{a0:.2f}'\ns = '%d' % np.array(4)"),
    ('0d int conv', "a0 = np.array(7)\nr = int(a0)\ns = [0, 1, 2, 3, 4, 5, 6, 7][a0]\nt = range(a0)"),
    ('sum type', "s = x.sum()\nt = type(s).__name__\nu = type(m.sum()).__name__\nv = type(i8.sum()).__name__"),
    ('mean of ints type', "r = i8.mean()\ns = type(r).__name__\nt = u8.mean(dtype=np.float32)"),
    ('item and tolist', "r = x.item(3)\ns = m.item(1, 2)\nt = m.tolist()\nq = x[:3].tolist()"),
    ('item types', "r = type(x.item(0)).__name__\ns = type(i8.item(0)).__name__\nt = type(b.item(0)).__name__"),
    ('tolist of ints', "r = i8[:3].tolist()\ns = type(r[0]).__name__"),
    ('int float bool of size-1', "r = int(i8[:1])\ns = float(x[:1])\nt = bool(b[:1])"),
    ('float of 2-elem error', "r = float(x[:2])"),
    ('complex of array', "r = complex(x[0])\ns = complex(x[:1] + 1j)"),
    ('round builtins', "r = round(x[0], 2)\ns = round(x[0])\nt = round(m.sum(), 1)"),
    ('math on scalars', "import math\nr = math.floor(x[0])\ns = math.isclose(x.sum(), x.sum())\nt = math.sqrt(abs(m[0, 0]))"),
    ('divmod scalar', "r = divmod(x[0], 1)\ns = divmod(i8[0], 7)"),
    ('scalar equality types', "r = x.sum() == x.sum()\ns = type(r).__name__"),
    ('hash scalars', "r = hash(x[0]) == hash(float(x[0]))\ns = hash(i8[0]) == hash(int(i8[0]))"),
    ('index method', "r = [10, 20, 30][i8.argmax() % 3]\ns = operator_like = (i32.argmin()).__index__()"),
    ('nbytes itemsize', "r = m.nbytes + x.itemsize\ns = m.strides\nt = m.T.strides\nq = x.size * 2"),
    ('shape attributes', "r = m.T.shape\ns = m[None].ndim\nt = m.size\nq = np.shape(x)"),
    ('dtype attributes', "r = x.dtype.name\ns = str(m.dtype)\nt = i8.dtype.itemsize\nq = x.dtype == np.float32"),
    ('scalar arithmetic chains', "s = x.sum()\nr = (s - s) / s\nq = s ** 2\nt = -s\nu = abs(s)"),
    ('numpy scalar methods', "s = x.sum()\nr = s.round(2)\nt = s.astype(np.int32)\nu = s.item()"),
    ('isinstance checks', "r = isinstance(x, np.ndarray)\ns = isinstance(x.sum(), np.floating)\nt = isinstance(x.sum(), float)\nq = isinstance(m.sum(), float)"),
    ('type of array', "r = type(x).__name__\ns = type(x * 2) is np.ndarray\nt = x.__class__.__name__"),
    ('issubdtype', "r = np.issubdtype(x.dtype, np.floating)\ns = np.issubdtype((x * 2).dtype, np.float32)"),
    ('np.ndim np.size', "r = np.ndim(x * 2)\ns = np.size(m, 0)\nt = np.shape(m.T)"),
    ('python float ops with np scalar', "r = 1.5 * x.sum()\ns = 2 ** x[0]\nt = 10 // i8[0] if i8[0] else 0"),
    ('scalar tobytes', "r = x.sum().tobytes()\ns = len(r)"),
    ('min max of scalar pair', "r = max(x[0], x[1])\ns = min(x.sum(), 0.0)"),
    ('str repr scalars', "r = str(x.sum())\ns = repr(x[0])\nt = repr(m.sum())\nq = str(i8[0])"),
]

# -- printing, formatting, the displayed last value ----------------------------------

PRINTING = [
    ('print sum', "print(x.sum())"),
    ('print fstring fmt', "print(f'{x.mean():.3f} {m.std():10.4e} {i8.max():+d}')"),
    ('print shape dtype', "print(m.shape, m.dtype, x.T.shape)"),
    ('print repr', "print(repr(x[:3]))\nprint(repr(m.sum(axis=0)))"),
    ('print type of element', "print(x[0], type(x[0]))"),
    ('print sep end', "print(x[:2], m[0, :2], sep=' | ', end='!\\n')"),
    ('print star', "print(*x[:3])"),
    ('fstring repr conversion', "r = f'{x[:2]!r}'\ns = f'{x.sum()!s}'"),
    ('fstring debug', "r = f'{x.sum()=}'\ns = f'{m.shape=}'"),
    ('percent format', "r = '%.2f' % x.mean()\ns = '%5.1f|%d' % (m.max(), i8.argmax())"),
    ('str format', "r = '{:>10.4f}'.format(x.max())\ns = '{0} {0}'.format(x[0])"),
    ('print to stringio', "import io\nbuf = io.StringIO()\nprint(x.sum(), file=buf)\nr = buf.getvalue()"),
    ('print to stderr', "import sys\nprint(x.max(), file=sys.stderr)\nr = x * 2"),
    ('print big array', "big = np.arange(2000.0)\nprint(big * 2)"),
    ('print 3d', "print(np.arange(24).reshape(2, 3, 4) * 2)"),
    ('print complex', "print(x[:2] + 1j)"),
    ('print bool array', "print(x > 0)"),
    ('print empty', "print(e, e.shape)\nprint(np.zeros((2, 0)))"),
    ('print 0d', "print(np.array(3.5) * 2)"),
    ('print float16', "print(h * 2)"),
    ('print inf nan', "print(np.array([1.0, np.inf, np.nan]) * x[:3])"),
    ('array2string', "r = np.array2string(x * 2, precision=2)\ns = np.array_str(m[:2])"),
    ('format array spec error', "r = f'{x:.2f}'"),
    ('format 0d spec ok', "r = f'{x.sum():.2f}'\ns = format(m.max(), 'e')"),
    ('format 1-elem array spec', "r = f'{x[:1]}'\ns = format(x[:1])"),
    ('print in loop', "for row in m[:2]:\n    print(row.sum(), row.argmax())"),
    ('print then error', "print('start')\nr = x * m"),
    ('print list of arrays', "print([x[:2], x[2:4]])"),
    ('print dict of scalars', "print({'mean': x.mean(), 'max': x.max()})"),
    ('print tuple scalars', "print((x.sum(), i8.sum()))"),
    ('display tuple of arrays', "x * 2, m.sum()"),
    ('display suppressed', "x.sum();"),
    ('display suppressed comment', "x.sum();  # quiet"),
    ('display T', "m.T"),
    ('display after assign', "y = x * 2\ny"),
    ('display element', "x[0]"),
    ('display None', "None"),
    ('display after print', "print(1)\nx"),
    ('display slice of expr', "(x * 2)[:2]"),
    ('display list', "[x[0], x[1]]"),
    ('display dict', "{'a': x.sum(), 'b': m[0]}"),
    ('display shape', "x.shape"),
    ('display dtype', "x.dtype"),
    ('display after inplace', "x += 1\nx"),
    ('display with trailing comment', "x.sum()  # total"),
    ('display multiline expr', "(x +\n 1)"),
    ('display under if', "if True:\n    x.sum()"),
    ('display trailing blank lines', "x.max()\n\n\n"),
    ('display comment after', "x.sum()\n# done"),
    ('display assignment none', "y = x.sum()"),
    ('display augassign none', "x += 1"),
    ('display scalar int', "len(x)"),
    ('display bool', "(x > 0).any()"),
    ('display string', "f'{x.sum():.2f}'"),
    ('display function call none', "np.copyto(x, 0)"),
    ('display method none', "x.sort()"),
    ('display 0d array', "np.array(1.5) + np.zeros(())"),
    ('display semicolon in string', "'a;'"),
    ('display two statements one line', "y = x * 2; y.sum()"),
    ('display semicolon after two', "y = x * 2; y.sum();"),
    ('display underscore', "x * 2\n"),
    ('display lambda', "lambda v: v"),
    ('display generator type', "type(v for v in x)"),
]

# -- lists, dicts, objects holding arrays; namespace tricks ---------------------------

CONTAINERS = [
    ('list elem iadd is input', "L = [x, m]\nL[0] += 1\nr = L[0] is x"),
    ('list elem rebind', "L = [x]\nL[0] = L[0] + 1\nr = L[0] is x"),
    ('dict elem imul', "D = {'x': x}\nD['x'] *= 2"),
    ('setup list append then write', "lst.append(x)\nlst[-1][0] = 5"),
    ('setup dict slice view write', "d['k'] = x[:3]\nd['k'][:] = 0"),
    ('list repeated same obj', "L = [x] * 3\nL[1][0] = 9\nr = L[0][0]"),
    ('list of rows views', "L = list(m)\nL[0][:] = 0\nr = m[0].sum()"),
    ('tuple elem write', "t = (x, m)\nt[0][:] = 1"),
    ('list sort by key', "L = [x, x * 2, -x]\nL.sort(key=lambda a: a.sum())\nr = L[0] is x"),
    ('list pop insert', "L = [x * 1, x * 2]\nv = L.pop(0)\nL.insert(0, v + 1)"),
    ('list extend with array', "L = [1]\nL.extend(x[:3])\nr = L"),
    ('list += array', "L = [1, 2]\nL += x[:2]\nr = len(L)"),
    ('list slice assign array', "L = [0, 0, 0, 0]\nL[1:3] = x[:2]"),
    ('list index of array error', "L = [m, x]\nr = L.index(x)"),
    ('list count error', "L = [x * 1, x]\nr = L.count(x)"),
    ('list remove identity first', "L = [x, m]\nL.remove(x)"),
    ('dict update with arrays', "D = {}\nD.update(a=x * 2, b=m.T)\nr = D['b'].shape"),
    ('dict items loop inplace', "D = {'a': x, 'b': m}\nfor k, v in D.items():\n    v *= 2"),
    ('dict values sum', "D = {'a': x.sum(), 'b': m.sum()}\nr = sum(D.values())"),
    ('dict fromkeys same array', "D = dict.fromkeys(['a', 'b'], np.zeros(3))\nD['a'][0] = 1\nr = D['b'][0]"),
    ('defaultdict of lists', "from collections import defaultdict\nG = defaultdict(list)\nfor v in i8:\n    G[int(v) % 3].append(v)\nr = {k: len(q) for k, q in G.items()}"),
    ('deque of arrays', "from collections import deque\nq = deque(maxlen=2)\nfor row in m:\n    q.append(row * 2)\nr = list(q)"),
    ('counter over ints', "from collections import Counter\nc = Counter((i8 % 3).tolist())\nr = c.most_common(1)"),
    ('nested dict arrays', "cfg = {'w': {'a': x, 'b': [m, x * 2]}}\ncfg['w']['b'][1] += 1\ncfg['w']['a'][0] = -1"),
    ('obj attr setattr', "setattr(obj, 'w', x * 2)\nr = getattr(obj, 'w').sum()"),
    ('obj attr inplace view', "obj.v = x[::2]\nobj.v *= 0"),
    ('object dict direct', "obj.__dict__['q'] = m[0]\nr = obj.q.sum()"),
    ('simplenamespace', "from types import SimpleNamespace\nns = SimpleNamespace(a=x, b=x * 2)\nns.a += 1\nr = ns.b - ns.a"),
    ('globals lookup', "r = 'x' in globals()\ns = globals()['m'].shape"),
    ('globals setitem', "globals()['y'] = x * 2\nr = y.sum()"),
    ('globals update', "globals().update(y2=m * 2)\nr = y2.shape"),
    ('locals at module', "r = sorted(k for k in locals() if k in ('x', 'm', 'zz'))"),
    ('vars no arg', "r = 'm' in vars()"),
    ('dir contains', "r = 'x' in dir()"),
    ('exec in cell', "exec('y = x * 2')\nr = y.sum()"),
    ('eval in cell', "r = eval('x * 2 + m.sum()')"),
    ('eval with dict', "r = eval('a * 2', {'a': x})"),
    ('compile and exec', "code = compile('z3 = x + 1', '<s>', 'exec')\nexec(code)\nr = z3 * 2"),
    ('vars of obj', "obj.a = x\nr = list(vars(obj))"),
    ('id stable', "r = id(x) == id(x)\ns = x is x[...] if False else x[...] is x"),
    ('copy module', "import copy\nr = copy.copy(x)\ns = copy.deepcopy([x, m])\nr[0] = 9\ns[0][0] = 8"),
    ('pickle roundtrip', "import pickle\nr = pickle.loads(pickle.dumps(x * 2))"),
    ('weakref to array', "import weakref\nref = weakref.ref(x)\nr = ref() is x"),
    ('sys getrefcount', "import sys\nr = sys.getsizeof(x) > 0"),
    ('array in set of ids', "seen = {id(x), id(m)}\nr = id(x) in seen"),
    ('str join of scalars', "r = ', '.join(f'{v:.2f}' for v in x[:3])"),
    ('json dumps', "import json\nr = json.dumps({'s': float(x.sum()), 'l': i8[:2].tolist()})"),
    ('json dumps numpy error', "import json\nr = json.dumps({'s': x.sum()})"),
]

# -- randomness: the generators advance as in plain execution -------------------------

RANDOM = [
    ('legacy seed draws', "np.random.seed(1)\nr = np.random.rand(3) + x[:3]\ns = np.random.randn()"),
    ('default_rng in cell', "g = np.random.default_rng(5)\na1 = g.normal(size=3) * x[:3]\na2 = g.integers(0, 10, 3)"),
    ('setup rng advances', "r = rng.random(3) * x[:3]\ns = rng.random()\nstate = rng.bit_generator.state['state']['state']"),
    ('rng permutation', "r = rng.permutation(x)\ns = rng.permutation(8)"),
    ('rng shuffle inplace', "rng.shuffle(x)\nr = x * 2"),
    ('rng shuffle rows', "rng.shuffle(m)\nr = m[:, 0]"),
    ('legacy shuffle rows', "np.random.shuffle(m)\nr = m.sum(axis=1)"),
    ('rng choice', "r = rng.choice(x, 3)\ns = rng.choice(5, 2, replace=False)"),
    ('rng index', "idx = rng.integers(0, 8, 5)\nr = x[idx]"),
    ('noise add', "noise = rng.standard_normal(x.shape).astype(np.float32)\nr = x + noise"),
    ('legacy random scalar', "r = np.random.random() * x"),
    ('rng in loop', "acc = np.zeros(3)\nfor _ in range(3):\n    acc += rng.random(3)"),
    ('rng draw then error', "r = rng.random(3)\ns = r + m"),
    ('rng draw in function', "def noisy(a):\n    return a + rng.normal(size=a.shape)\nr = noisy(m)\ns = noisy(m)"),
    ('rng draw in comprehension', "r = [rng.random() * v for v in x[:3]]"),
    ('rng spawn', "child = rng.spawn(1)[0]\nr = child.random(2) + x[:2]"),
    ('legacy get_state', "st = np.random.get_state()[2]\nr = np.random.rand(2)\nst2 = np.random.get_state()[2]"),
    ('randomstate object', "rs = np.random.RandomState(3)\nr = rs.rand(3) * x[:3]\ns = rs.randint(0, 5)"),
    ('rng dropout mask', "keep = rng.random(m.shape) > 0.5\nr = np.where(keep, m / 0.5, 0)"),
    ('rng bit generator advance', "g = np.random.default_rng(0)\ng.bit_generator.advance(5)\nr = g.random(2)"),
    ('python random module', "import random\nrandom.seed(0)\nr = random.random() * x[:2]\ns = random.choice(list(x[:3]))"),
    ('rng out param', "o = np.empty(3)\nrng.random(out=o)\nr = o * 2"),
]

# -- sequences of cells: what a fused cell leaves, used by the next one ---------------

_CLOSURE = "def make(a):\n    def f(v):\n        return v + a\n    return f\nadd_x = make(x * 2)"
_SCALER = ("class Scaler:\n    def __init__(self, a):\n        self.mu = a.mean(axis=0)\n        self.sd = a.std(axis=0)\n"
           "    def __call__(self, a):\n        return (a - self.mu) / self.sd\ns = Scaler(m)")
SEQUENCES = [
    # (name, earlier cells, the cell, which run under %%fuse in the fused run)
    ('closure used later', (_CLOSURE,), "r = add_x(1)\ns = add_x(x)", "fp"),
    ('closure used later fused', (_CLOSURE,), "r = add_x(1)\ns = add_x(x)", "ff"),
    ('closure cell contents', (_CLOSURE,), "r = add_x.__closure__[0].cell_contents * 1", "fp"),
    ('default arg computed', ("def f(v, w=x * 2):\n    return v + w",), "r = f(1)\nx[0] = 100\ns = f(0)", "fp"),
    ('default arg input alias', ("def f(v, w=x):\n    return v + w",), "x += 1\nr = f(0)", "fp"),
    ('default arg input alias fused', ("def f(v, w=x):\n    return v + w",), "x += 1\nr = f(0)", "ff"),
    ('kwdefaults', ("def f(v, *, w=x.sum()):\n    return v * w",), "r = f(x)\nk = f.__kwdefaults__['w']", "fp"),
    ('genexpr continued', ("g = (row.sum() for row in m)\nfirst = next(g)",), "rest = list(g)", "fp"),
    ('generator fn continued', ("def gen():\n    for row in m:\n        yield row * 2\ng = gen()\na1 = next(g)",),
     "a2 = next(g)\nm[2] = 0\na3 = next(g)", "fp"),
    ('iterator continued', ("it = iter(x)\nfirst = next(it)",), "second = next(it)\nrest = list(it)", "fp"),
    ('map continued', ("mp = map(np.exp, m)",), "r = list(mp)", "fp"),
    ('zip continued', ("zp = zip(x, x * 2)\nfirst = next(zp)",), "rest = list(zp)", "fp"),
    ('partial bound', ("from functools import partial\nscale = partial(np.multiply, x * 2)",), "r = scale(3)", "fp"),
    ('lambdas with scalar defaults', ("fs = [lambda v, k=k: v * k for k in x[:3]]",), "r = [f(2) for f in fs]", "fp"),
    ('scaler later', (_SCALER,), "r = s(m * 2)\nmu = s.mu", "fp"),
    ('scaler later fused', (_SCALER,), "r = s(m * 2)\nmu = s.mu", "ff"),
    ('bound method of result', ("f = (x * 2).sum",), "r = f()", "fp"),
    ('bound method of input', ("f = x.sum\ng = m.T.copy",), "x[0] = 50\nr = f()\nq = g()", "fp"),
    ('lambda reads intermediate', ("t = x * 2\nf = lambda: t + 1",), "r = f()", "fp"),
    ('function reads intermediate', ("t = x * 2\ndef g():\n    return t.sum()\nr = g()",), "s = g()", "fp"),
    ('class reads global later', ("class A:\n    def val(self):\n        return w * 2\nw = x + 1\na = A()",), "r = a.val()", "fp"),
    ('plain func global counter', ("calls = 0\ndef f(a):\n    global calls\n    calls += 1\n    return a * 2",),
     "r = f(x)\ns = f(m)", "pf"),
    ('plain func reads changed global', ("def f():\n    return x * 2",), "x += 1\nr = f()", "pf"),
    ('plain func reads rebound global', ("def f():\n    return x * 2",), "x = x + 1\nr = f()", "pf"),
    ('plain func mutates global', ("def bump():\n    x[0] += 10",), "bump()\nr = x * 1", "pf"),
    ('plain func global rebind', ("def norm():\n    global x\n    x = x / 2",), "norm()\nr = x + 1", "pf"),
    ('plain func error after mutation', ("def bump():\n    x[0] += 10",), "bump()\nr = x + m", "pf"),
    ('plain class method mutating', ("class Acc:\n    def __init__(self):\n        self.tot = np.zeros(6)\n    def add(self, row):\n        self.tot += row\nacc = Acc()",),
     "for row in m:\n    acc.add(row)\nr = acc.tot * 1", "pf"),
    ('warning again in second cell', ("r = x / 0",), "s = x / 0", "ff"),
    ('print in both cells', ("print(x.sum())",), "print(m.sum())\nm.max()", "ff"),
]

# what the cell's functions, generators and objects keep, used by the next cell
SEQUENCES += [
    ('generator with array local', ("def gen(a):\n    for k in range(3):\n        yield a * k\ng = gen(x * 2)\nfirst = next(g)",),
     "rest = list(g)", "fp"),
    ('generator over rows fused twice', ("g = (row * 2 for row in m)\nfirst = next(g)",), "second = next(g)\nr = second + 1", "ff"),
    ('partial keyword', ("from functools import partial\nf = partial(lambda a, b: a + b, b=x * 2)",), "r = f(1)", "fp"),
    ('methods in a list', ("fs = [(x * 2).sum, m.max, x.copy]",), "r = [f() for f in fs]", "fp"),
    ('function attribute later', ("def f():\n    return f.w * 2\nf.w = x + 1",), "r = f()", "fp"),
    ('lambda default later', ("g = lambda v, w=x.mean(): v - w",), "r = g(x)", "fp"),
    ('class attribute later', ("class C:\n    w = x * 2",), "r = C.w + 1", "fp"),
    ('slots object later', ("class P:\n    __slots__ = ('a',)\n    def __init__(self, a):\n        self.a = a\np = P(x * 3)",),
     "r = p.a + 1", "fp"),
    ('deque later', ("from collections import deque\nq = deque([x * 2, m], maxlen=3)",), "q.append(x)\nr = [a.sum() for a in q]", "fp"),
    ('closure counter later', ("def counter(a):\n    tot = a * 0\n    def add(v):\n        nonlocal tot\n        tot = tot + v\n        return tot\n    return add\nacc = counter(x)\nacc(x)",),
     "r = acc(x)", "fp"),
    ('iterator over 2d later', ("it = iter(m)\nrow0 = next(it)",), "m[1] = 0\nrow1 = next(it)", "fp"),
]

# the same cell run twice (the second run reads what the first bound; caches included)
TWICE = [
    ('held in list', "if 'L' not in globals():\n    L = [x]\nx += 1\nr = L[0] * 1"),
    ('x = x * 2', "x = x * 2"),
    ('x += 1', "x += 1"),
    ('m = m.T', "m = m.T\nr = m[0]"),
    ('shrink', "x = x[:-1]\nr = x.sum()"),
    ('dtype change', "x = x.astype(np.float64)\nr = x * 2"),
    ('accumulate list', "acc = globals().get('acc', []) + [x.sum()]"),
    ('counter', "cnt = globals().get('cnt', 0) + 1\nr = x * cnt"),
    ('seed and draw', "np.random.seed(0)\nr = np.random.rand(3) * x[:3]"),
    ('rng draw', "r = rng.random(2) + x[:2]"),
    ('y = x * 2', "y = x * 2\nz2 = y + 1\nr = y"),
    ('view then write', "v = x[::2]\nv += 1"),
    ('print', "print(x.sum())\ny = x + 1"),
    ('warns', "y = x / 0"),
    ('display', "x.sum()"),
    ('function def', "def f(a):\n    return a * 2\nr = f(x)"),
    ('normalize', "x = (x - x.mean()) / x.std()"),
    ('append', "lst.append(x.max())\nr = len(lst)"),
    ('error', "r = x * 2\nr = r + m"),
]

# reads and writes of the user's array through another reference (a list, an attribute)
# in the same cell as a traced in-place update or read (fuselab/trace/held.py)
STALE = [
    ('list read after traced update', "L = [x]", "x += 1\nr = L[0] + 0"),
    ('attribute read after traced update', "obj.a = x", "x *= 2\nr = obj.a.sum()"),
    ('untraced write after traced read', "L = [x]", "r = x * 2\nL[0] += 1"),
    ('untraced setitem after traced read', "L = [x]", "r = x * 2\nL[0][0] = 5\ns = x + 0"),
    ('traced read after untraced write', "L = [x]", "L[0] += 1\nr = x * 2"),
    ('list read without update', "L = [x]", "r = x * 2\ns = L[0] + 0"),
    ('dict value read after traced update', "dd = {'a': x}", "x -= 3\nr = dd['a'] * 1"),
    ('dict value written after traced read', "dd = {'a': x}", "r = x * 2\ndd['a'][2] = 7\ns = x.sum()"),
    ('closure read after traced update', "def mk(a):\n    return lambda: a + 0\nget = mk(x)",
     "x += 1\nr = get()"),
    ('default arg read same cell', "def f(v, w=x):\n    return v + w", "x *= 3\nr = f(1)\ns = x + 1"),
    ('held view updated through list', "L = [x]", "L[0][1:] += 1\nr = x * 2"),
    ('held array view updated', "L = [x]", "x[1:] *= 2\nr = L[0] + 0\ns = x.sum()"),
    ('view of held read after untraced write', "L = [x]", "v = x[2:]\nr = v * 1\nL[0][3] = 9\ns = v * 1"),
    ('held list of view', "L = [x[2:]]", "x += 1\nr = L[0] + 0\nL[0][0] = -5\ns = x * 1"),
    ('held update then traced read', "L = [x]", "x += 1\nL[0][0] = 100\nr = x * 2\nx *= 2\nq = L[0] + 0"),
    ('held read at a break', "L = [x]", "r = x * 2\nL[0] += 1\nprint(r.sum())\ns = x * 2"),
    ('held 2d rows swapped', "L = [m]", "m[0], m[1] = m[1].copy(), m[0].copy()\nr = L[0].sum(axis=1)"),
    ('held update then error', "L = [x]", "x += 1\nr = L[0] + 0\nr = r + m"),
    ('held update no other read', "L = [x]", "x += 1"),
    ('held displayed earlier', "L = [x]\nx", "x += 1\nr = L[0] + 0"),
    ('held by attribute of view', "obj.v = x[::2]", "x *= -1\nr = obj.v + 0"),
]

ALL = (named_cases(EXCEPTIONS) + named_cases(DEFINITIONS) + named_cases(CONTROL) + named_cases(FPSTATE) + named_cases(PROMOTION)
       + named_cases(VIEWS) + named_cases(DTYPES) + named_cases(SCALARS) + named_cases(PRINTING) + named_cases(CONTAINERS)
       + named_cases(RANDOM)
       + [Case(name=n, before=bf, cell=c, fuse_which=w) for n, bf, c, w in SEQUENCES]
       + [Case(name=f"twice: {n}", before=(c,), cell=c) for n, c in TWICE]
       + [Case(name=n, setup=st, cell=c) for n, st, c in STALE])

# differences found and not fixed in this round (strict: a fix makes them pass, and fails here)
KNOWN: dict[str, str] = {
    "class array_ufunc passthrough":
        "a class of the cell whose __array__ returns a traced array: NumPy (np.exp, np.asarray) calls it "
        "and refuses the tracer it gets ('object __array__ method not producing an array'); fuselab's "
        "NumPy layer does not look for __array__ on non-tracer operands",
    "masked mean":
        "np.ma.masked_array(x) runs as plain NumPy on the array the tracer hands out (Tracer.__array__), "
        "a read-only view of the trace's value: the masked array's data is not writeable (NumPy's is "
        "writeable, on x's memory)",
    "as_strided then write base":
        "an update of an array that an np.lib.stride_tricks window views is refused (test_fidelity_redteam2: "
        "the window is plain NumPy outside the trace and would be stale)",
    "zip continued":
        "a zip left suspended keeps its last result tuple (traced array items) inside, where the binder "
        "cannot reach it: the cell is refused",
}


@pytest.mark.parametrize("case", params(ALL, KNOWN))
def test_cell_as_plain_execution(harness, case):
    assert_as_plain(harness, case, SETUP)
