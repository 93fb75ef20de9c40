"""Values a traced Dask cell needs in the middle of the trace (a graph break, or a Dask
method such as `.compute()` or `.chunks`): the lazy Dask array of one node, made by the
fused plan of the nodes it depends on. Computing it runs fuselab's kernels, not Dask's
op-by-op tasks; nothing is computed here."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..ir import Graph, Node, prune
from ..plan import make_plan
from .execute import execute
from .planning import chunkable


def lazy_value(nodes: Sequence[Node], node: int, input_value: Callable[[int], Any],
               values: Mapping[int, Any]) -> Any:
    """The lazy value of `node` of a graph under construction; `values`: nodes whose
    values are already made (earlier breaks), which are reused, not made again."""
    graph = prune(Graph(tuple(nodes[: node + 1]), (("value", node),)))
    kept = _kept(nodes, node)
    inputs = {graph.nodes[new].args["name"]: input_value(old)
              for new, old in enumerate(kept) if graph.nodes[new].op == "input"}
    known = {new: values[old] for new, old in enumerate(kept) if old in values}
    plan = chunkable(make_plan(graph))
    return execute(plan, inputs, known=known).outputs["value"]


def _kept(nodes: Sequence[Node], node: int) -> list[int]:
    """The ids `ir.prune` keeps for output `node`, ascending (its renumbering)."""
    live = {node}
    for i in range(node, -1, -1):
        if i in live:
            live.update(nodes[i].inputs)
    return sorted(live)
