"""What every template needs about the kernel it generates: names, parameters, loads,
and assembly of the module source."""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..codegen import index as ix
from ..ir import Graph, format_node
from ..plan.model import Kernel
from .emit import CodegenError, Names, PyEmitter, array_name, indent, load_expr, render
from .model import NumbaOptions, PyKernel
from .pyops import FAST_F32
from .pytypes import ctor, storage

_HELPER = re.compile(r"\bfl_\w+")


@functools.lru_cache(maxsize=1)
def helpers_digest() -> str:
    """A digest of scalar.py, written into every generated module that imports from it:
    Numba's disk cache of a kernel checks the kernel's own file only, so a module whose
    helpers changed must be a new module (its name is the hash of its source)."""
    return hashlib.sha256((Path(__file__).parent / "scalar.py").read_bytes()).hexdigest()[:16]


@dataclass
class PyContext:
    graph: Graph
    kernel: Kernel
    index: int
    options: NumbaOptions
    names: Names = field(default_factory=Names)
    in_arr: dict[int, str] = field(default_factory=dict)    # input node -> parameter
    out_arr: dict[int, str] = field(default_factory=dict)   # output node -> parameter
    loads: list[tuple[int, ix.Affine]] = field(default_factory=list)   # every (input, offset) an emitter loaded

    def __post_init__(self) -> None:
        for nid in self.kernel.inputs:
            self.in_arr[nid] = self.names.fresh(f"in_{array_name(self.graph, nid)}")
        for nid in self.kernel.outputs:
            self.out_arr[nid] = self.names.fresh(f"out_{array_name(self.graph, nid)}")
        if not self.kernel.outputs:
            raise CodegenError(f"kernel {self.name} stores nothing")

    @property
    def name(self) -> str:
        return f"k{self.index}_{self.kernel.name or 'kernel'}"

    def emitter(self, fixed: dict[int, str] | None = None) -> PyEmitter:
        """An emitter whose loads are named locals (`x = in_x[i]`), one per element read."""
        holder: list[PyEmitter] = []
        seen: dict[tuple[int, ix.Affine], str] = {}

        def load(nid: int, offset: ix.Affine) -> str:
            if (nid, offset) not in seen:
                self.loads.append((nid, offset))
                name = self.names.fresh(array_name(self.graph, nid))
                holder[0].emit(f"{name} = {load_expr(self.in_arr[nid], self.graph.nodes[nid].dtype, render(offset))}")
                seen[(nid, offset)] = name
            return seen[(nid, offset)]

        em = PyEmitter(self.graph, self.kernel.nodes, self.kernel.inputs, self.options.fp16_math, self.names,
                       load, fixed)
        holder.append(em)
        return em

    def store(self, nid: int, offset: ix.Affine, value: str) -> str:
        return f"{self.out_arr[nid]}[ix({render(offset)})] = {value}"

    def listing(self) -> list[str]:
        return [format_node(self.graph, i) for i in self.kernel.nodes]

    def finish(self, header: list[str], phases: list["Phase"], notes: tuple[str, ...] = (),
               scratch: list[tuple[str, str, int]] = ()) -> PyKernel:
        """The module: a header comment, imports (only the helpers the body calls), and the
        kernel, a cfunc of (phase, lo, hi, args) running iterations lo..hi-1 of loop
        `phase` (driver.py). Its arrays are views of the addresses in `args`: inputs,
        outputs, then the arrays of `scratch` ((name, NumPy dtype as source, length) each: a
        split reduction's partials, written by one phase and read by the next). An
        allocation of constant size at the top of a loop body is made once per call
        instead of once per iteration (it is written before it is read)."""
        g = self.graph
        params = [self.in_arr[n] for n in self.kernel.inputs] + [self.out_arr[n] for n in self.kernel.outputs]
        dtypes = [ctor(storage(g.nodes[n].dtype)) for n in (*self.kernel.inputs, *self.kernel.outputs)]
        sizes = [g.nodes[n].aval.size for n in (*self.kernel.inputs, *self.kernel.outputs)]
        spec: list[tuple[str, int]] = []
        for name, dtype, n in scratch:
            params.append(name)
            dtypes.append(dtype)
            sizes.append(n)
            spec.append((np.dtype(getattr(np, dtype.removeprefix("np."))).name, n))
        views = [f"{p} = carray(args[{k}], {n}, {d})" for k, (p, n, d) in enumerate(zip(params, sizes, dtypes))]
        code = ["# one parallel loop: each call runs its iterations lo..hi-1 (driver.py)" if len(phases) == 1 else
                f"# {len(phases)} parallel loops, one after the other: each call runs iterations lo..hi-1 of loop "
                "`phase` (driver.py)", *views]
        for k, ph in enumerate(phases):
            hoisted = [l for l in ph.body if _ALLOC.fullmatch(l.split("  #")[0])]
            rest = [l for l in ph.body if l not in hoisted]
            if ph.count == 1:
                # no loop: LLVM's vectorizer can search for hours through a loop whose body
                # does not depend on its index (vputils::isSingleScalar on a fold's selects)
                loop = [f"# phase {k}: {ph.what} (1 iteration)", f"{ph.var} = 0", *hoisted, *rest]
            elif ph.chunk and ph.count > ph.chunk:
                loop = [f"# phase {k}: {ph.what} ({ph.count} iterations, in chunks on the driver's threads; "
                        f"here in runs of {ph.chunk}, each prefetching the lines of a later run)",
                        *hoisted, f"for {ph.chunk_var} in range(lo, hi, {ph.chunk}):", *indent(list(ph.ahead), 1),
                        f"    for {ph.var} in range({ph.chunk_var}, min({ph.chunk_var} + {ph.chunk}, hi)):",
                        *indent(rest, 2)]
            else:
                loop = [f"# phase {k}: {ph.what} ({ph.count} iterations, in chunks on the driver's threads)",
                        *hoisted, f"for {ph.var} in range(lo, hi):", *indent(rest, 1)]
            if len(phases) == 1:
                code += loop
            else:
                code += [f"{'if' if k == 0 else 'elif'} phase == {k}:", *indent(loop, 1)]
        called = set(_HELPER.findall("\n".join(code)))
        if self.options.wide_vectors and _WIDE_HELPERS & called:
            code.insert(1 + len(views), "fl_wide_vectors()  # 512-bit vectors where the CPU has AVX-512 "
                                        "(LLVM's own choice: 256)")
            called.add("fl_wide_vectors")
        fn = [self.options.decorator(), f"def {self.name}(phase, lo, hi, args):", *indent(code, 1)]
        helpers = sorted(called)
        header = [*header, "arrays: " + ", ".join(
            f"{self.in_arr.get(n) or self.out_arr[n]} {g.nodes[n].aval}" for n in (*self.kernel.inputs, *self.kernel.outputs))]
        lines = [f"# {h}" if h else "#" for h in header]
        lines += ["import numpy as np", "from numba import carray, cfunc", ""]
        lines += ["# Indices are unsigned: Numba then drops its check for negative indices, which",
                  "# would keep LLVM from vectorizing the loops.", "ix = np.uint64", ""]
        if helpers:
            lines += [f"from fuselab.numba_backend.scalar import {', '.join(helpers)}  # scalar.py {helpers_digest()}", ""]
        lines += ["", *fn, ""]
        return PyKernel(self.index, self.name, "\n".join(lines), self.kernel.template,
                        tuple(self.kernel.inputs), tuple(self.kernel.outputs), notes,
                        tuple(ph.count for ph in phases), tuple(spec))


# Kernels that compute float32 exp / expm1 / tanh ask for 512-bit vectors on AVX-512
# CPUs (scalar.fl_wide_vectors): compute-bound, they gain (GELU 1.6x, sigmoid, tanh and
# softmax 1.2x at 64 MiB), where memory-bound kernels gain nothing and some lose (a float32
# sum of squares 1.5x slower, the float16 8-op chain 1.4x, float64 exp 1.14x: the 2-core
# Xeon, 2026-12-05, both widths in alternating rounds)
_WIDE_HELPERS = frozenset(FAST_F32.values())
_ALLOC = re.compile(r"(?P<name>\w+) = np\.empty\((?P<n>\d+), (?P<dtype>np\.\w+)\)")


def is_allocation(line: str) -> bool:
    """Whether a statement of a phase's body is an array allocation (`a = np.empty(n, T)`),
    which finish() hoists out of the phase's loop (where it stands at the body's top level)."""
    return bool(_ALLOC.fullmatch(line.split("  #")[0]))


@dataclass(frozen=True)
class Phase:
    """One parallel loop of a kernel: `for var in range(count): body`, whose iterations
    are independent (the driver runs them in chunks, on several threads)."""

    var: str
    count: int
    body: list[str]
    what: str
    # run in chunks of `chunk` iterations (`chunk_var` the first of each), with `ahead`
    # (statements of chunk_var: prefetches) at the top of each: prefetch.py
    chunk: int = 0
    chunk_var: str = ""
    ahead: tuple[str, ...] = ()
