"""What every template needs about the kernel it generates: names, parameters, the
index type, and assembly of the final translation unit."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..ir import Graph
from ..plan.kernels import check_kernel
from ..plan.model import Kernel, Space
from . import index as ix
from .config import Config
from .emit import Names, array_name, indent
from .model import CodegenError, CodegenOptions, KernelCode, Param
from .prelude import prelude_for
from .types import storage_type


# Grid sizes. Blocks enough for many waves, so that the last, partial wave costs little
# whatever occupancy the compiler's register use allows; grid-stride loops cover the rest.
GRID_BLOCKS_PER_SM = 256   # cap of grid-stride grids (one block per 256 threads of work below it)
SPLIT_BLOCKS_PER_SM = 64   # grid of the block-per-row row kernels (rows looped over)
# Reductions' blocks per SM: plan/reduce_layout.py (the cost model reads them too).


def kernel_space(graph: Graph, kernel: Kernel, name: str) -> Space:
    """The iteration space legality found for the kernel (Kernel.space): the templates
    generate code over it and derive none of it again. A kernel built without one is
    checked now; one its template cannot run is a CodegenError with legality's reason."""
    space = kernel.space
    if space is None or space.template is not kernel.template:
        verdict = check_kernel(graph, kernel)
        if not verdict.ok:
            raise CodegenError(f"{kernel.template.value} kernel {name}: {verdict.reason}")
        space = verdict.space
    return space


@dataclass
class KernelContext:
    graph: Graph
    kernel: Kernel
    index: int
    options: CodegenOptions
    names: Names = field(default_factory=Names)
    in_ptr: dict[int, str] = field(default_factory=dict)    # input node -> pointer name
    out_ptr: dict[int, str] = field(default_factory=dict)   # output node -> pointer name
    scratch: list[Param] = field(default_factory=list)
    # nodes computed once per block into shared memory and read from there (pointwise
    # kernels' values of broadcast operands alone: pointwise.py's tables) -> table name
    tables: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for nid in self.kernel.inputs:
            self.in_ptr[nid] = self.names.fresh(f"in_{array_name(self.graph, nid)}")
        for nid in self.kernel.outputs:
            self.out_ptr[nid] = self.names.fresh(f"out_{array_name(self.graph, nid)}")
        if not self.kernel.outputs:
            raise CodegenError(f"kernel {self.name} stores nothing")

    @property
    def name(self) -> str:
        return f"k{self.index}_{self.kernel.name or 'kernel'}"

    @cached_property
    def space(self) -> Space:
        return kernel_space(self.graph, self.kernel, self.name)

    def node(self, nid: int):
        return self.graph.nodes[nid]

    def add_scratch(self, nbytes: int) -> str:
        name = self.names.fresh("scratch")
        self.scratch.append(Param("scratch", name, None, int(nbytes)))
        return name

    def grid_cap(self) -> int:
        return self.options.sm_count * GRID_BLOCKS_PER_SM

    def split_target(self) -> int:
        return self.options.sm_count * SPLIT_BLOCKS_PER_SM

    def index_type(self, *extra_sizes: int) -> str:
        """32-bit unsigned index math when every array and loop fits, else 64-bit."""
        sizes = [self.node(n).aval.size for n in (*self.kernel.inputs, *self.kernel.outputs)]
        sizes += [self.node(n).aval.size for n in self.kernel.nodes]
        return "unsigned int" if ix.fits_32(*sizes, *extra_sizes) else "unsigned long long"

    def params(self) -> tuple[Param, ...]:
        ins = tuple(Param("input", self.in_ptr[n], n) for n in self.kernel.inputs)
        outs = tuple(Param("output", self.out_ptr[n], n) for n in self.kernel.outputs)
        return ins + outs + tuple(self.scratch)

    def signature(self) -> str:
        decls = []
        for p in self.params():
            if p.role == "input":
                decls.append(f"const {storage_type(self.node(p.node).dtype)}* __restrict__ {p.name}")
            elif p.role == "output":
                decls.append(f"{storage_type(self.node(p.node).dtype)}* __restrict__ {p.name}")
            else:
                decls.append(f"unsigned char* __restrict__ {p.name}")
        return ", ".join(decls)

    def finish(self, header: list[str], helpers: list[str], body: list[str], grid: int | tuple[int, int, int],
               block: int | tuple[int, int, int], shared_mem: int = 0,
               notes: tuple[str, ...] = (), min_blocks: int = 1, config: Config | None = None) -> KernelCode:
        """Assemble the translation unit: a header comment, the prelude the code uses,
        helper functions, then the kernel."""
        block3 = block if isinstance(block, tuple) else (block, 1, 1)
        grid3 = grid if isinstance(grid, tuple) else (grid, 1, 1)
        bounds = f"{block3[0] * block3[1] * block3[2]}" + (f", {min_blocks}" if min_blocks > 1 else "")
        kernel = [f'extern "C" __global__ void __launch_bounds__({bounds}) {self.name}({self.signature()}) {{',
                  *indent(body, 1), "}"]
        code = "\n".join([*helpers, *kernel])
        prelude = prelude_for(code)
        parts = ["\n".join(f"// {h}" if h else "//" for h in header), ""]
        if prelude:
            parts += [prelude]
        parts += [code, ""]
        return KernelCode(index=self.index, name=self.name, source="\n".join(parts),
                          template=self.kernel.template, grid=grid3, block=block3, shared_mem=shared_mem,
                          params=self.params(), nvrtc_options=self.options.nvrtc_options(), notes=notes,
                          config=config)

    def listing(self) -> list[str]:
        """The kernel's part of the plan listing, for the header comment."""
        from ..ir import format_node
        return [format_node(self.graph, i) for i in self.kernel.nodes]
