"""What code generation hands to the runtime: plain, frozen descriptions of launches."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..plan.model import Template

FP16_MODES = ("numpy", "fast")
ROW_TIERS = ("auto", "warp", "block", "smem", "looped", "thread", "slab", "slab-smem", "staged")


@dataclass(frozen=True)
class CodegenOptions:
    """How to generate code.

    fp16_math: "numpy" (default) rounds every float16 operation to half, as NumPy does op
        by op, so results equal NumPy's; "fast" keeps float32 intermediates inside a
        kernel and rounds only what it stores (more accurate, fewer conversions, but no
        longer bit-equal to NumPy).
    fmad: let the compiler contract a*b+c into one FMA. Off by default: NumPy rounds the
        product first, and contraction changes the last bit (or more, after cancellation).
    sm_count: multiprocessors of the target device; grids are sized from it (the runtime
        passes the real count, 132 is an H200).
    row_tier: "auto", or force a row-kernel tier ("warp", "block", "smem", "looped"; for
        rows along a strided axis "thread", re-read in every pass, "staged", a thread a row
        read and written through shared memory by the block, or "slab" / "slab-smem",
        a block per slab of adjacent rows, re-read or in shared memory) to compare them; a tier
        the row cannot use falls back to the automatic choice.
    """

    fp16_math: str = "numpy"
    fmad: bool = False
    sm_count: int = 132
    arch: str = "sm_90"
    block_size: int = 256
    row_tier: str = "auto"

    def __post_init__(self) -> None:
        if self.fp16_math not in FP16_MODES:
            raise ValueError(f"fp16_math must be one of {FP16_MODES}, not {self.fp16_math!r}")
        if self.row_tier not in ROW_TIERS:
            raise ValueError(f"row_tier must be one of {ROW_TIERS}, not {self.row_tier!r}")
        # grids are sized from these: a count below one gives a grid no GPU launches
        if int(self.sm_count) < 1:
            raise ValueError(f"sm_count must be a multiprocessor count of at least 1, not {self.sm_count!r}")
        if not 32 <= int(self.block_size) <= 1024:
            raise ValueError(f"block_size must be from 32 to 1024 threads, not {self.block_size!r}")

    def nvrtc_options(self) -> tuple[str, ...]:
        # IEEE float32 as NumPy computes it: subnormals kept, division and sqrt correctly
        # rounded (NVRTC's defaults, named so that no caller's default can change them)
        return ("-std=c++17", f"--fmad={'true' if self.fmad else 'false'}", "--ftz=false", "--prec-div=true",
                "--prec-sqrt=true")


Role = Literal["input", "output", "scratch"]


@dataclass(frozen=True)
class Param:
    """One kernel argument, in launch order. Arrays are C-contiguous and 16-byte aligned;
    `node` is the graph node the array holds. A scratch buffer is `nbytes` bytes that must
    be zero before the first launch; every launch leaves it zero again."""

    role: Role
    name: str                 # the C parameter name
    node: int | None = None   # input / output: the node id
    nbytes: int = 0           # scratch: its size


@dataclass(frozen=True)
class KernelCode:
    """A generated kernel, complete: the runtime launches it without re-deriving anything.

    grid[0] == 0 means there is nothing to compute (an empty array): skip the launch.
    """

    index: int                # position in the plan
    name: str                 # the extern "C" function name, e.g. k2_exp_mul_sum
    source: str               # the whole translation unit (prelude included)
    template: Template
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int           # dynamic shared memory bytes per block
    params: tuple[Param, ...]
    nvrtc_options: tuple[str, ...]
    notes: tuple[str, ...] = ()   # strategy decisions, for the explorer ("16-byte vector path")
    config: Any = None            # the launch configuration (codegen.config), with its why

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(p.node for p in self.params if p.role == "input")  # type: ignore[misc]

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(p.node for p in self.params if p.role == "output")  # type: ignore[misc]

    @property
    def scratch_bytes(self) -> int:
        return sum(p.nbytes for p in self.params if p.role == "scratch")

    @property
    def empty(self) -> bool:
        return self.grid[0] == 0


@dataclass(frozen=True)
class OpaqueCall:
    """A kernel that is a library call: node `node` runs through CuPy (`fn.call(cupy, ...)`).
    `nodes` are the kernel's nodes in order: the call and the views or constants it reads,
    which CuPy evaluates as it would eagerly (a view costs nothing there). A fused kernel
    the templates cannot compile (`reason` says why: a complex value) is one too: its
    nodes run through CuPy one by one, as the cell would run without fuselab."""

    index: int
    name: str
    node: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...] = field(default=())
    nodes: tuple[int, ...] = field(default=())
    template: Template = Template.OPAQUE
    reason: str = ""


class CodegenError(ValueError):
    """A kernel that the templates cannot express (a planner bug, or an unsupported op)."""
