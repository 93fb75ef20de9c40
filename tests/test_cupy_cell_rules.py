"""Rules that make a CuPy cell follow plain CuPy where CuPy and NumPy differ, checked on
the CPU with test_cupy_cells.py's stand-in `cupy` (NumPy underneath, arrays marked as
CuPy's); on a GPU, test_fidelity_redteam2_gpu.py runs such cells with real CuPy arrays.
Also: functions a %%fuse cell defines have their source, as in plain IPython."""
from __future__ import annotations

import numpy as np
import pytest

import fuselab
from fuselab.interp import run_graph
from fuselab.trace.core import Tracer
from test_cupy_cells import _ns, fake  # noqa: F401  (the fixture)


def _run(cell: str, ns: dict) -> tuple:
    tr = fuselab.trace_cell(cell, ns)
    return tr, run_graph(tr.graph, tr.inputs)


def test_an_integer_index_of_a_cupy_array_is_a_0d_view_that_sees_later_writes(fake):
    x = np.arange(5.0)
    _, out = _run("x[0], x[1] = x[1], x[0]\nr = x * 1", _ns(fake, x=x))
    np.testing.assert_array_equal(out["r"], [1.0, 1.0, 2.0, 3.0, 4.0])   # CuPy: x[0] views the new x[1]
    _, out = _run("x[0], x[1] = x[1], x[0]\nr = x * 1", {"np": np, "x": np.arange(5.0)})
    np.testing.assert_array_equal(out["r"], [1.0, 0.0, 2.0, 3.0, 4.0])   # NumPy: scalars, a swap


def test_iterating_a_cupy_array_gives_views(fake):
    cell = "acc = []\nfor v in x:\n    x[0] = 100\n    acc.append(float(v))"
    tr, _ = _run(cell, _ns(fake, x=np.arange(4.0)))
    assert tr.bindings["acc"] == [100.0, 1.0, 2.0, 3.0]
    tr, _ = _run(cell, {"np": np, "x": np.arange(4.0)})
    assert tr.bindings["acc"] == [0.0, 1.0, 2.0, 3.0]


def test_an_item_of_a_cupy_array_is_an_array_not_a_numpy_scalar(fake):
    seen = []
    ns = {**_ns(fake, x=np.arange(3.0)), "probe": lambda t: seen.append((isinstance(t, Tracer), t._scalar))}
    fuselab.trace_cell("probe(x[1])\nprobe(x.reshape(1, 3)[0, 2])", ns)
    assert seen == [(True, False), (True, False)]


def test_numpy_imported_in_a_cupy_cell_makes_numpy_arrays(fake):
    tr = fuselab.trace_cell("import numpy as np2\ny = np2.exp(x)\nz = np2.zeros(3)", _ns(fake, x=np.arange(3.0)))
    assert type(tr.bindings["z"]) is np.ndarray and "z" not in tr.bound   # host memory, as plain
    assert "y" in tr.bound                                                   # CuPy's exp, traced


def _adds_of_inputs(tr) -> int:
    nodes = tr.graph.nodes
    return sum(n.op == "add" and all(nodes[i].op in ("input", "const") for i in n.inputs) for n in nodes)


def test_a_numpy_array_meeting_a_cupy_array_runs_as_cupy_decides(fake):
    class Device(np.ndarray):   # the cell's array type, as cupy.ndarray is
        pass
    ns = {**_ns(fake, x=np.arange(3.0).view(Device)), "host": np.ones(3)}
    tr = fuselab.trace_cell("y = x * 2\nz = y + host", ns)
    assert _adds_of_inputs(tr) == 0   # the mixed add ran for real (CuPy raises TypeError there)
    ns = {"np": np, "x": np.arange(3.0), "host": np.ones(3)}
    assert _adds_of_inputs(fuselab.trace_cell("z = x + host", ns)) == 1   # NumPy's: traced


def test_a_call_cupys_signature_refuses_fails_as_in_plain_cupy(fake):
    def clip(a, a_min, a_max, out=None):   # cupy.clip's parameters (no min= / max=)
        return np.clip(a, a_min, a_max, out=out)
    clip.__module__ = "cupy._math.misc"
    fake.clip = clip
    with pytest.raises(fuselab.errors.TraceError, match="unexpected keyword argument 'min'"):
        fuselab.trace_cell("c = np.clip(x, min=-1, max=1)", _ns(fake, x=np.arange(3.0)))
    tr, out = _run("c = np.clip(x, 0.5, 1.5)", _ns(fake, x=np.arange(3.0)))
    np.testing.assert_array_equal(out["c"], [0.5, 1.0, 1.5])


def test_python_ints_beyond_64_bits_run_as_cupy_decides_in_cupy_cells(fake):
    tr = fuselab.trace_cell("r = h + 10**40\ns = h + 10**3", _ns(fake, h=np.ones(3, np.float32)))
    assert _adds_of_inputs(tr) == 1   # CuPy raises OverflowError for 10**40: a real run decides
    tr = fuselab.trace_cell("r = h + 10**40\ns = h + 10**3", {"np": np, "h": np.ones(3, np.float32)})
    assert _adds_of_inputs(tr) == 2   # NumPy's rules: both traced


def test_functions_a_fused_cell_defines_have_their_source():
    """inspect.getsource (cupy.vectorize and Numba read it) of a function or lambda the
    %%fuse cell defines: plain IPython's line cache has the cell; so does %%fuse's."""
    pytest.importorskip("IPython")
    from fidelity import Case, Harness, assert_as_plain
    from fidelity_corpus import SETUP
    harness = Harness()
    for cell in ("import inspect\ndef g(v):\n    return v + 1\nsrc = inspect.getsource(g)\nr = g(x)",
                 "import inspect\nf = lambda v: v * 2\nsrc = inspect.getsource(f)\nr = f(x)",
                 # cupyx.jit (cupy.vectorize of a lambda) parses the whole cached text
                 "import ast, inspect, linecache\nf = lambda v: v * 2\n"
                 "tree = ast.dump(ast.parse(''.join(linecache.getlines(inspect.getsourcefile(f)))))"):
        assert_as_plain(harness, Case(name="source", cell=cell), SETUP)


@pytest.mark.parametrize("module", ["numpy", "cupy"])
def test_a_list_of_bools_indexes_as_a_mask(fake, module):
    """`m[[True, False, True, False]]` selects rows 0 and 2 (NumPy and CuPy alike): the
    graph's node has the mask's shape rule, not integer indexing's 4 rows (which the GPU
    run's reshape of the 2 rows refused)."""
    m = np.arange(24.0).reshape(4, 6)
    ns = _ns(fake, m=m) if module == "cupy" else {"np": np, "m": m}
    tr, out = _run("r = m[[True, False, True, False]]\nm[[True, False, True, False], 1] = 0", ns)
    node = tr.graph.nodes[dict(tr.graph.outputs)["r"]]
    assert node.aval.shape == (2, 6)
    np.testing.assert_array_equal(out["r"], np.arange(24.0).reshape(4, 6)[[0, 2]])
    np.testing.assert_array_equal(out["m"][:, 1], [0, 7, 0, 19])


def test_a_list_operand_in_a_cupy_cell_runs_as_cupy_decides(fake):
    cell = "y = x * 2\ny[[0, 1]] += [1, 2]\nz = y + [1, 1, 1]"
    def adds(tr) -> int:
        return sum(n.op == "add" for n in tr.graph.nodes)
    assert adds(fuselab.trace_cell(cell, _ns(fake, x=np.arange(3.0)))) == 0   # CuPy refuses lists: real runs
    assert adds(fuselab.trace_cell(cell, {"np": np, "x": np.arange(3.0)})) == 2   # NumPy's: traced


def test_iterating_a_long_cupy_array_gives_views_of_it(fake):
    """40 items (past the 32 a NumPy cell unrolls): the loop's items are the array's own
    views, so `big[i] = v * 2` shows in v, and `row += 1` in the array."""
    tr, out = _run("big = np.arange(40.0)\nfor i, v in enumerate(big):\n    big[i] = v * 2\nr = v * 1",
                   _ns(fake, x=np.arange(3.0)))
    assert float(out["r"]) == 78.0                        # v views big[39], now 78 (CuPy)
    np.testing.assert_array_equal(out["big"], np.arange(40.0) * 2)
    tr, out = _run("big = np.ones((40, 2))\nfor row in big:\n    row += 1\nr = big.sum()", _ns(fake, x=np.arange(3.0)))
    assert float(out["r"]) == 160.0


def test_a_byte_order_in_a_cupy_cell_runs_as_cupy_decides(fake):
    """CuPy has no big-endian arrays (x.astype('>f4') raises ValueError): a real run
    decides; NumPy's cells trace the conversion."""
    cell = "c = x.astype('>f4')\nr = c + 1"
    assert not any(n.op == "astype" for n in fuselab.trace_cell(cell, _ns(fake, x=np.arange(3.0))).graph.nodes)
    assert any(n.op == "astype" for n in fuselab.trace_cell(cell, {"np": np, "x": np.arange(3.0)}).graph.nodes)


class _DeviceGenerator:
    """Stands in for cupy.random.Generator: it writes into `out`, and takes only real
    arrays (CuPy's raised "Cannot convert numpy.ndarray to cupy" for the trace's stand-in)."""

    def random(self, size=None, dtype=np.float64, out=None):
        if out is not None and type(out) is not np.ndarray:
            raise TypeError(f"Cannot convert {type(out).__name__} to cupy._core.core._ndarray_base")
        out[...] = np.arange(out.size).reshape(out.shape) / 10
        return out


_DeviceGenerator.__module__ = "cupy.random._generator_api"
_DeviceGenerator.__name__ = "Generator"


def test_a_cupy_generator_writes_into_an_array_of_the_cell(fake):
    ns = {**_ns(fake, x=np.ones(4)), "rng": _DeviceGenerator()}
    tr, out = _run("o = np.empty(4)\nrng.random(out=o)\nr = o + x", ns)
    np.testing.assert_array_equal(out["r"], [1.0, 1.1, 1.2, 1.3])
