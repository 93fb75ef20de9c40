"""Fidelity of views and copies, scalars and conversions (red-team sections A, B, I, D, G, K):

- reshape (and ravel) views exactly where NumPy's reshape views (the new shape has strides
  over the array's memory, NumPy's _attempt_nocopy_reshape), in C and Fortran order, and
  copies elsewhere (`a.T.reshape(-1)`), so writes reach the base, or not, as in NumPy;
- np.flip / fliplr / flipud and a complex array's .real / .imag (np.real, np.imag) are views
  sharing memory: writes through them reach the base, and later base writes show through;
- a NumPy scalar's .T, .real, .imag, .view(), .reshape(()), np.real(s), np.take(a, 1),
  np.searchsorted(a, 2.5) are NumPy scalars; `.real` of a real array is the array itself;
- a.partition(k) partitions a in place;
- a scalar stored into an array (x[i] = v, x.fill(v), np.full) converts as NumPy does,
  with its ValueError / OverflowError / TypeError and warnings; ComplexWarning on casts
  from complex to real;
- np.hstack / vstack / concatenate take lists and scalars among their arrays."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Case, Harness, assert_as_plain, differences  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402

A23 = "a = np.arange(6.0).reshape(2, 3)"
A4 = "a = np.arange(4.0)"
C2 = "c = np.array([1+2j, 3-1j])"

CASES = [
    # A: reshape views only where NumPy's does
    Case("reshape of a transpose copies", "r = a.T.reshape(-1)\nr[0] = 100\ns = a.sum()\n", A23),
    Case("reshape of a strided slice copies", "r = a[:, :2].reshape(-1)\nr += 1\n",
         "a = np.arange(12.0).reshape(3, 4)"),
    Case("reshape copy does not see base writes", "r = a.T.reshape(-1)\na[0, 0] = 50\ns = r + 0\n", A23),
    Case("reshape order F of a transpose views", "r = a.T.reshape(-1, order='F')\nr[1] = -9\n", A23),
    Case("ravel order F of a transpose views", "r = a.T.ravel(order='F')\nr[1] = -9\ns = a.ravel('F')\ns[0] = 7\n",
         A23),
    # B: flips and complex parts are views
    Case("flip write reaches base", "r = np.flip(a)\nr[0] = 100\n", A4),
    Case("flip sees base write", "r = np.flip(a)\na[0] = 50\ns = r * 1\n", A4),
    Case("fliplr flipud", "r = np.fliplr(a)\nr[0, 0] = 100\nq = np.flipud(a)\nq += 1\n",
         "a = np.arange(4.0).reshape(2, 2)"),
    Case("complex real view write", "r = c.real\nr[0] = 5\n", C2),
    Case("complex imag view inplace", "c.imag[:] = 0\nq = c * 1\n", C2),
    Case("np.real view write", "r = np.real(c)\nr[1] = 0\nc[0] = 7\ns = r * 1\n", C2),
    # I: scalars stay scalars
    Case("scalar attributes", "s = a[0].T\nt = a[0].real\nu = a[0].imag\nv = a[0].view()\nw = a[0].reshape(())\n",
         "a = np.arange(1.0, 4.0)"),
    Case("complex scalar parts", "s = c[0].real\nt = c[0].imag\nu = np.real(c[0])\nv = np.imag(a.sum())\n",
         C2 + "\na = np.arange(3.0)"),
    Case("take and searchsorted scalars", "s = np.take(a, 1)\nt = a.take(1)\nu = np.searchsorted(a, 2.5)\n"
         "v = np.searchsorted(a, np.float32(0.5))\n", "a = np.arange(3.0)"),
    Case("real of a real array is itself", "s = a.real\nt = z0.real\nsame = (s is a, t is z0)\n",
         "a = np.arange(3.0)\nz0 = np.array(2.0)"),
    # D: in-place partition
    Case("partition method in place", "a.partition(1)\nr = a[:2]\n", "a = np.array([5.0, 1.0, 4.0, 2.0])"),
    # G: NumPy's conversion of a stored scalar
    Case("setitem nan into ints", "a[0] = np.nan\n", "a = np.zeros(3, dtype=np.int32)"),
    Case("setitem inf into ints", "a[1] = np.inf\n", "a = np.zeros(3, dtype=np.int32)"),
    Case("setitem big float into int8", "a[0] = 300.0\n", "a = np.zeros(3, dtype=np.int8)"),
    Case("setitem big numpy int into int8", "a[0] = np.int64(300)\n", "a = np.zeros(3, dtype=np.int8)"),
    Case("setitem complex into floats", "a[0] = 1+2j\n", "a = np.zeros(3)"),
    Case("fill nan into ints", "a.fill(np.nan)\n", "a = np.zeros(3, dtype=np.int64)"),
    Case("full big into int8", "r = np.full(3, 300, dtype=np.int8)\n"),
    Case("setitem numpy nan scalar of the cell", "a[0] = b.max()\n",
         "a = np.zeros(3, dtype=np.int32)\nb = np.array([np.nan, 1.0])"),
    Case("setitem complex array warns", "a[:] = c\n", "a = np.zeros(2)\n" + C2),
    Case("astype complex to float warns", "r = c.astype(float)\ns = c.astype(int)\n", C2),
    # K: lists and scalars among joined arrays
    Case("hstack with a list and a scalar", "r = np.hstack([a, [9]])\ns = np.hstack([a, 9.0])\n", "a = np.arange(3.0)"),
    Case("concatenate with a list", "r = np.concatenate([a, [9, 8]])\ns = np.concatenate((b, [300]))\n"
         "t = np.vstack([a, [1, 2, 3]])\n", "a = np.arange(3.0)\nb = np.arange(3, dtype=np.int8)"),
]


@pytest.fixture(scope="module")
def harness():
    return Harness()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_views_copies_scalars_conversions(harness, case):
    assert_as_plain(harness, case, SETUP)
