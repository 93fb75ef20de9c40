"""What every template needs about the kernel it generates: names, parameters, loads,
and assembly of the module source."""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen import index as ix
from ..ir import Graph, format_node
from ..plan.model import Kernel
from .emit import CodegenError, Names, PyEmitter, array_name, indent, load_expr, render
from .model import NumbaOptions, PyKernel

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

    def finish(self, header: list[str], body: list[str], notes: tuple[str, ...] = ()) -> PyKernel:
        """The module: a header comment, imports (only the helpers the body calls), and
        the kernel function."""
        params = [self.in_arr[n] for n in self.kernel.inputs] + [self.out_arr[n] for n in self.kernel.outputs]
        fn = [self.options.decorator(), f"def {self.name}({', '.join(params)}):", *indent(body, 1)]
        helpers = sorted(set(_HELPER.findall("\n".join(body))))
        g = self.graph
        header = [*header, "parameters: " + ", ".join(
            f"{self.in_arr.get(n) or self.out_arr[n]} {g.nodes[n].aval}" for n in (*self.kernel.inputs, *self.kernel.outputs))]
        lines = [f"# {h}" if h else "#" for h in header]
        lines += ["import numpy as np", "from numba import njit, prange", ""]
        lines += ["# Indices are unsigned: Numba then drops its check for negative indices, which",
                  "# would keep LLVM from vectorizing the loops.", "ix = np.uint64", ""]
        if helpers:
            lines += [f"from fuselab.numba_backend.scalar import {', '.join(helpers)}  # scalar.py {helpers_digest()}", ""]
        lines += ["", *fn, ""]
        return PyKernel(self.index, self.name, "\n".join(lines), self.kernel.template,
                        tuple(self.kernel.inputs), tuple(self.kernel.outputs), notes)
