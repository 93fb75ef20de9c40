"""Graph breaks on the GPU.

At a graph break the trace computed the values Python needed (eagerly, with NumPy or
CuPy: trace.TraceResult.break_values) and handed them to Python, which went on. The plan
runs later, all of it: kernels in stage order on one stream, with no device sync at a
break, since Python already has its values. What the run takes from the breaks:

- a computed value a kernel stores that Python saw is taken, not the kernel's own: what
  follows from it, and its binding, are then what Python branched on (a GPU sum rounds
  otherwise than NumPy's), and an opaque call (np.unique, a random draw) is not run
  twice; the CPU backends do the same;
- a kernel left with nothing else to store is not launched, and a taken value nothing
  reads is not moved. Views and constants are recomputed (exact, and a view of the
  user's array taken as a kernel's output would alias it).

Host values (a NumPy cell's) are copied to the device before the first launch: a copy
from host memory in the middle of the launches would wait for the kernels before it.
"""
from __future__ import annotations

from typing import Collection

from ..plan.model import Plan, is_free


def from_breaks(plan: Plan, known: Collection[int]) -> tuple[tuple[bool, tuple[int, ...]], ...]:
    """Per kernel of `plan`: whether it runs, and the values it stores that the run takes
    from the breaks instead (`known`: the nodes whose values were computed there)."""
    if not known:
        return ((True, ()),) * len(plan.kernels)
    g = plan.graph
    needed = set(g.output_ids)
    out: list[tuple[bool, tuple[int, ...]]] = []
    for kern in reversed(plan.kernels):
        wanted = [o for o in kern.outputs if o in needed]
        taken = tuple(o for o in wanted if o in known and not is_free(g, o))
        runs = len(taken) < len(wanted)
        if runs:
            needed.update(kern.inputs)
        out.append((runs, taken))
    return tuple(reversed(out))
