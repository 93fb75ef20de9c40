"""Launch configurations: the per-shape choices a template leaves open.

Each template has a heuristic that picks one from the problem's shape (what the code did
before configurations were explicit) and a short list of candidates around it that an
autotuner may time on the GPU (fuselab.runtime.tune). A configuration changes how work
is split over threads, never what is computed; reductions may add in another order,
within the documented tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass, fields


OPTION_FLAGS = ("tables", "gather")


@dataclass(frozen=True)
class Config:
    """Base of the templates' configurations. `why` says where it came from."""

    why: str = ""

    def key(self) -> tuple:
        """What distinguishes two configurations (not the explanation); an option flag
        that is off is left out, so labels (and tuning caches) read as before it existed."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self)
                     if f.name != "why" and not (f.name in OPTION_FLAGS and getattr(self, f.name) is False))

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.key())

    def with_why(self, why: str) -> "Config":
        from dataclasses import replace
        return replace(self, why=why)


@dataclass(frozen=True)
class PointwiseConfig(Config):
    block: int = 256        # threads per block
    unroll: int = 1         # elements (or vectors) each thread handles per step, a block apart
    tables: bool = False    # values of broadcast operands alone computed once per block
    gather: bool = False    # wider vectors, small operands that runs do not follow gathered


@dataclass(frozen=True)
class InnerConfig(Config):
    """A reduction over the contiguous end of the input: `group` lanes per output (mode
    "lanes", 1-32, `block` threads holding block / group outputs), or a whole block of
    `block` threads per output (mode "block"), split over `splits` blocks when the
    outputs are too few to fill the GPU."""

    mode: str = "lanes"
    group: int = 32
    block: int = 256
    splits: int = 1
    width: int = 1          # elements per vector access (1: scalar loads)
    tables: bool = False    # values of small operands alone computed once per block (tables.py)


@dataclass(frozen=True)
class ColumnConfig(Config):
    """A reduction along a strided axis: threads across the contiguous kept axis
    (`lanes` lanes of a warp, `width` elements each; with fewer than 32 lanes, a warp
    covers 32 / lanes rows at once), `rows` rows of warps along the reduced axis, and the
    reduced axis split over `splits` blocks."""

    width: int = 1
    rows: int = 8
    splits: int = 1
    lanes: int = 32         # lanes of a warp along the kept axis; the others take more rows
    tables: bool = False    # values of small operands alone computed once per block (tables.py)


@dataclass(frozen=True)
class RowConfig(Config):
    """A row kernel's tier and threads: `threads` lanes per row (warp tier) or threads
    per block (the block tiers)."""

    tier: str = "warp"      # warp | block | smem | looped | thread | staged | slab | slab-smem
    threads: int = 32
