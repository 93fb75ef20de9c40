"""512-bit vectors on AVX-512 CPUs (NumbaOptions.wide_vectors, scalar.fl_wide_vectors):
every generated kernel asks for them, the compiled function carries LLVM's attribute
exactly where the CPU has AVX-512, and a kernel gives the same bits either way (the width
must never change a result: no reassociation, fixed lanes for sums)."""
from __future__ import annotations

import numpy as np
import pytest

from numba_util import PARALLEL, SERIAL, numba, run_numba  # noqa: F401 - skips without Numba

from fuselab.ir import GraphBuilder
from fuselab.numba_backend import NumbaOptions
from fuselab.numba_backend.codegen import generate
from fuselab.numba_backend.scalar import HAS_AVX512
from fuselab.plan import make_plan
from fuselab.plan.model import Template

from graphs import all_elementwise, all_reductions, layernorm, one_kernel, sample, softmax

NARROW = NumbaOptions(parallel=False, wide_vectors=False)
ATTRIBUTE = '"prefer-vector-width"="512"'


def _gelu(n: int, c: float = 0.044715):
    b = GraphBuilder()
    x = b.input("x", (n,), np.float32)
    cube = b.elemwise("multiply", [b.elemwise("multiply", [x, x]), x])
    inner = b.elemwise("multiply", [b.elemwise("add", [x, b.elemwise("multiply", [cube, b.const(c, np.float32)])]),
                                    b.const(0.7978845608028654, np.float32)])
    t = b.elemwise("add", [b.elemwise("tanh", [inner]), b.const(1.0, np.float32)])
    return b.build([("y", b.elemwise("multiply", [b.elemwise("multiply", [x, t]), b.const(0.5, np.float32)]))])


def test_kernels_of_float32_transcendentals_ask_for_wide_vectors_unless_told_not_to():
    plan = make_plan(softmax(64, 256))
    (wide,), (narrow,) = generate(plan), generate(plan, NumbaOptions(wide_vectors=False))
    assert "fl_wide_vectors()" in wide.source and "import" in wide.source
    assert "fl_wide_vectors" in next(l for l in wide.source.splitlines() if l.startswith("from fuselab"))
    assert "fl_wide_vectors" not in narrow.source


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_kernels_without_them_leave_the_width_to_llvm(dtype):
    # memory-bound kernels gain nothing from 512 bits and some lose (a sum of squares)
    b = GraphBuilder()
    x = b.input("x", (1000,), dtype)
    sq = b.elemwise("multiply", [x, x])
    g = b.build([("s", b.reduce("sum", sq, (0,), False, None)), ("r", b.elemwise("sqrt", [sq]))])
    for code in generate(make_plan(g)):
        assert "fl_wide_vectors" not in code.source


def test_the_compiled_kernel_carries_the_attribute_where_the_cpu_has_avx512(tmp_path, monkeypatch):
    # a constant no other test uses and a fresh cache folder: compiled here, so Numba has its IR
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    from fuselab.numba_backend.run import Executable
    plan = make_plan(_gelu(1031, c=0.0447151234))
    wide = Executable(plan, SERIAL).compiled[0].cfunc.inspect_llvm()
    narrow = Executable(plan, NARROW).compiled[0].cfunc.inspect_llvm()
    assert (ATTRIBUTE in wide) == HAS_AVX512
    assert ATTRIBUTE not in narrow


def _same_bits(plan, inputs) -> None:
    wide = run_numba(plan, inputs, SERIAL)
    narrow = run_numba(plan, inputs, NARROW)
    assert wide.keys() == narrow.keys()
    for k in wide:
        a, b = np.ascontiguousarray(wide[k]), np.ascontiguousarray(narrow[k])
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes(), f"{k}: the vector width changed the result"


def _with_specials(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[::97] = np.nan
        flat[1::89] = np.inf
        flat[2::83] = -np.inf
        flat[3::79] = -0.0
        flat[4::73] = np.finfo(x.dtype).max
        flat[5::71] = np.finfo(x.dtype).tiny / 4     # subnormal
    return x


def _inputs(g, rng, specials: bool = True, **bounds) -> dict[str, np.ndarray]:
    out = {}
    for name, i in zip(g.input_names(), g.input_ids):
        x = sample(g.nodes[i].dtype, g.nodes[i].aval.shape, rng, **bounds)
        out[name] = _with_specials(x) if specials else x
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.uint8])
def test_every_elementwise_op_gives_the_same_bits_at_either_width(dtype):
    g = all_elementwise(dtype, shape=(67, 33), bshape=(33,))
    rng = np.random.default_rng(5)
    inputs = _inputs(g, rng)
    _same_bits(one_kernel(g, Template.POINTWISE), inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_give_the_same_bits_at_either_width(dtype, axis):
    g = all_reductions(dtype, (129, 77), axis)
    rng = np.random.default_rng(6)
    inputs = _inputs(g, rng, specials=False)
    _same_bits(make_plan(g), inputs)


@pytest.mark.parametrize("graph", [lambda: _gelu(40_001), lambda: softmax(37, 1030), lambda: softmax(5, 16_411),
                                   lambda: layernorm(29, 777), lambda: softmax(40, 300, np.float16)],
                         ids=["gelu", "softmax", "softmax-long", "layernorm", "softmax-f16"])
def test_fused_workloads_give_the_same_bits_at_either_width(graph):
    g = graph()
    rng = np.random.default_rng(7)
    inputs = _inputs(g, rng, low=-12, high=12)
    _same_bits(make_plan(g), inputs)
