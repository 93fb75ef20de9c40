"""Fidelity of arrays that share memory: set-up arrays that are views of one another
(`v = a[2:]`, `v = a[::2]`, `m2 = a.reshape(2, 3)`, `at = a.T`, a read-only `a.view()`,
slices kept in a list or a dict) are one memory under %%fuse too, so a write through one
name is read through the others inside the cell (fuselab/trace/aliases.py). Where a
layout is no view %%fuse can express (another dtype), a write into that memory read
through the other name is a clear error, never a stale value.

Also: a namedtuple holding traced values, IndentationError named as Python names it,
and a reduction's bad `axis=` raising NumPy's TypeError."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from fidelity import FUSE_LINE, Case, Harness, assert_as_plain, differences  # noqa: E402
from fidelity_corpus import SETUP  # noqa: E402

A6 = "a = np.arange(6.0)"

CASES = [
    # C: set-up arrays over one memory
    Case("write view read base", "v[0] = -1\nr = a * 1\n", A6 + "\nv = a[2:]"),
    Case("write base read view", "a[3] = 99\nr = v + 0\n", A6 + "\nv = a[2:]"),
    Case("strided view sees base update", "a *= 2\nr = v.sum()\n", A6 + "\nv = a[::2]"),
    Case("strided view update seen by base", "v += 100\nr = a.sum()\n", A6 + "\nv = a[::2]"),
    Case("whole slice alias", "v[0] = 5\nr = a[0] * 1\n", A6 + "\nv = a[:]"),
    Case("reshape view", "m2[1] = 0\nr = a.sum()\n", A6 + "\nm2 = a.reshape(2, 3)"),
    Case("transpose view, owner not a name", "a[0] = -1\nr = at.sum(axis=1)\n",
         "a = np.arange(6.0).reshape(2, 3)\nat = a.T"),
    Case("print view after base write", "a[:] = 0\nprint(v)\n", A6 + "\nv = a[1:]"),
    Case("print base after view write", "v[:] = -1\nprint(a)\n", A6 + "\nv = a[1:]"),
    Case("read-only view sees base write", "a[0] = 1\nr = ro * 1\n",
         "a = np.zeros(3)\nro = a.view()\nro.flags.writeable = False"),
    Case("slice in a list read after a base write", "a[4] = -5\nr = L[1] + a[0]\n", A6 + "\nL = [a[:3], a[3:]]"),
    Case("negative stride", "v[0] = 100\nr = a * 1\n", A6 + "\nv = a[::-1]"),
    Case("2-d strided", "a += 1\nr = v.sum()\nv[0, 0] = -5\ns = a.sum()\n",
         "a = np.arange(12.0).reshape(3, 4)\nv = a[1:, ::2]"),
    Case("fortran-ordered owner", "v[:] = 0\nr = a.sum(axis=0)\n",
         "a = np.asfortranarray(np.arange(6.0).reshape(2, 3))\nv = a[:, 1:]"),
    Case("in-cell view of a set-up view", "w = v[1:]\na[:] = 7\nr = w * 1\nw[0] = 3\ns = a * 1\n",
         A6 + "\nv = a[2:]"),
    Case("3-d transposed slice", "t[...] = -t\nr = a.sum()\ns = t.copy()\n",
         "a = np.arange(24.0).reshape(2, 3, 4)\nt = a.transpose(1, 2, 0)[:, ::2]"),
    Case("column and row views", "c0 += 10\nr1 *= 2\nprint(a)\nz = c0 + r1[:1]\n",
         "a = np.arange(6.0).reshape(2, 3)\nc0 = a[:, 0]\nr1 = a[1]"),
    Case("loop over two views", "for i in range(3):\n    v[i] = i + 1\n    a[i] = -v[i]\nr = a * 1\n",
         "a = np.zeros(6)\nv = a[3:]"),
    Case("broadcast view sees base write", "a[0] = 5\nr = b * 1\n",
         "a = np.arange(3.0)\nb = np.broadcast_to(a, (2, 3))"),
    Case("0-d view", "z[...] = 5\nr = a * 1\n", "a = np.arange(3.0)\nz = a[1, ...]"),
    Case("view written before its owner is met", "v += 1\nr = L[0] * k[0]\n",
         "base = np.arange(6.0)\nv = base[1:4]\nL = [base]\ndel base\nk = np.ones(3)"),
    Case("view written before a sibling is met", "v[0] = -1\nr = d['w'] * k[0]\n",
         "base = np.arange(8.0)\nv = base[2:5]\nd = {'w': base[::2]}\ndel base\nk = np.ones(3)"),
    Case("int views", "a += 3\nr = v * 2\nv[1] = 100\n", "a = np.arange(6)\nv = a[::2]"),
    # K: a namedtuple of traced values
    Case("namedtuple of scalars", "from collections import namedtuple\nNT = namedtuple('NT', 'lo hi')\n"
         "nt = NT(a.min(), a.max())\n", "a = np.arange(3.0)"),
    Case("namedtuple of arrays", "p = P(a * 2, a + 1)\nq = [P(a, a * 3)]\n",
         "a = np.arange(3.0)\nfrom collections import namedtuple\nP = namedtuple('P', 'x y')"),
    # N: exception types as plain Python and NumPy give them
    Case("IndentationError", "r = a\n  s = 1\n", "a = np.arange(3.0)"),
    Case("axis str", "r = np.sum(a, axis='x')\n", "a = np.arange(6.0).reshape(2, 3)"),
    Case("axis str mean", "r = a.mean(axis='1')\n", "a = np.arange(6.0).reshape(2, 3)"),
    Case("axis bool", "r = a.sum(axis=True)\n", "a = np.arange(6.0).reshape(2, 3)"),
]


@pytest.fixture(scope="module")
def harness():
    return Harness()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_shared_memory_cell_as_plain(harness, case):
    assert_as_plain(harness, case, SETUP)


def test_unexpressible_shared_memory_is_refused_not_stale(harness):
    """`iv` views a's bytes as int64: no view op of the graph gives it, so reading it
    after a write into a is an error that says why, and a is left untouched."""
    case = Case("dtype view read after write", "a[0] = 1.5\nr = iv * 1\n",
                "a = np.arange(4.0)\niv = a.view(np.int64)")
    fused = harness.run(case, fuse=True, setup=SETUP, fuse_line=FUSE_LINE)
    assert "shares memory" in fused.error_text and "iv" in fused.error_text
    assert "r" not in fused.names
    assert harness.ip.user_ns["a"][0] == 0.0


def test_unexpressible_shared_memory_without_conflict_runs(harness):
    """Reads and writes of such arrays that cannot disagree still run fused."""
    for cell in ("a[0] = 1.5\nr = a * 2\n", "iv[0] = 5\nr = iv * 2\n", "r = iv + 1\ns = a * 2\n"):
        case = Case("dtype view", cell, "a = np.arange(4.0)\niv = a.view(np.int64)")
        plain = harness.run(case, fuse=False, setup=SETUP)
        fused = harness.run(case, fuse=True, setup=SETUP, fuse_line=FUSE_LINE)
        assert not differences(case, plain, fused), cell
