"""Warp-staged stores: a warp's output vectors go out through shared memory, 32
neighbouring elements a store instruction.

The stencil and row-vector paths give each thread a vector of W columns of one row.
Where a row's start keeps only part of a vector aligned (rows of an odd number of
float16 columns), a thread cannot store its vector whole and stores its elements one by
one: each warp store instruction then writes 2 bytes of every 16 (float16), an eighth of
each sector it touches, and the kernel ran at 22% of a copy's bandwidth (held-out outer
product (2, 33197291) float16, H200 2026-12-04: 2.03x torch.compile's time).

Staged, each lane puts its vector in the warp's slice of a shared buffer and its element
offset beside it; lane l then stores elements t * 32 + l (t < W) of the warp's 32 * W,
each at its owner's offset plus its place in the owner's vector: wherever the owners'
columns run on (one row), the 32 stores of an instruction are neighbours. Every lane of
the warp must reach the exchange's __syncwarp, so the loop over items is the warp's
(`warp_loop`): lanes past the last item run the last item's loads again and store
nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from .context import KernelContext
from .emit import array_name
from .types import storage_type


def wanted(ctx: KernelContext, store_width: int, width: int) -> bool:
    """Whether to stage: the aligned part of a vector (store_width elements) is narrower
    than 8 bytes for some output (a thread's own stores would be that narrow)."""
    g = ctx.graph
    return store_width < width and any(store_width * g.nodes[o].dtype.itemsize < 8 for o in ctx.kernel.outputs)


@dataclass(frozen=True)
class WarpStage:
    """The shared buffers of one kernel's staged stores: an element offset a thread and,
    per output, `width` elements a thread."""

    width: int
    offsets: str
    buffers: tuple[tuple[int, str], ...]    # (output node, buffer)

    def declarations(self, ctx: KernelContext, block: int) -> list[str]:
        g = ctx.graph
        return [f"__shared__ index_t {self.offsets}[{block}];",
                *(f"__shared__ __align__(16) {storage_type(g.nodes[o].dtype)} {buf}[{block * self.width}];"
                  for o, buf in self.buffers),
                "const int lane = threadIdx.x & 31, warp0 = threadIdx.x - lane;"]

    def store(self, ctx: KernelContext, vectors: dict[int, str], offset: str) -> list[str]:
        """Lines storing each output's vector (`vectors`: output -> its fl_vec) of this
        thread's W elements at element `offset` (when `active`), through the stage."""
        W = self.width
        lines = [f"{self.offsets}[threadIdx.x] = active ? index_t({offset}) : ~index_t(0);"]
        lines += [f"fl_store_vec<{W}>({buf} + threadIdx.x * {W}, {vectors[o]});" for o, buf in self.buffers]
        moves = [f"    if (off != ~index_t(0)) {ctx.out_ptr[o]}[off + p % {W}] = {buf}[warp0 * {W} + p];"
                 for o, buf in self.buffers]
        return [*lines, "__syncwarp();", "#pragma unroll", f"for (int t = 0; t < {W}; ++t) {{",
                "    const int p = t * 32 + lane;",
                f"    const index_t off = {self.offsets}[warp0 + p / {W}];", *moves, "}",
                "__syncwarp();   // every lane has stored before the stage is written again"]


def make(ctx: KernelContext, width: int) -> WarpStage:
    g = ctx.graph
    return WarpStage(width, ctx.names.fresh("stage_off"),
                     tuple((o, ctx.names.fresh(f"stage_{array_name(g, o)}")) for o in ctx.kernel.outputs))


def warp_loop(first: str, step: str, count: str, body: list[str]) -> list[str]:
    """A grid-stride loop over items j < count that every lane of a warp runs as long as
    any lane has an item (`first`: this thread's first item; `step` a multiple of 32):
    `active` says whether the lane's j is its own; an idle lane takes the last item."""
    return [f"for (index_t jw = {first} - lane; jw < {count}; jw += {step}) {{   // the warp's first item",
            f"    const bool active = jw + lane < {count};",
            f"    const index_t j = active ? jw + lane : {count} - 1;",
            *("    " + b for b in body), "}"]
