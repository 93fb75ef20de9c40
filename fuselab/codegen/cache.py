"""The one cache of generated code, in memory.

A kernel's code depends on the plan's graph (with the user's lines its comments quote),
the kernel and its place in the plan, the codegen options and the launch configuration;
entries are keyed by exactly those. The runtime and its autotuner, the session, the
explorer and the tests all generate through it, so a kernel is generated once per
process, and a cell traced again (an equal graph) generates nothing. Compiled modules
are the runtime's own cache (runtime/compile.py, cubins on disk); tuned launch
configurations are the autotuner's (runtime/tune.py, on disk).
"""
from __future__ import annotations

from collections import OrderedDict
from itertools import count
from typing import Any, Callable, Hashable, TypeVar

from ..ir import Graph

ENTRIES = 2048      # results kept, the least recently used dropped first
GRAPHS = 256        # distinct graphs remembered

T = TypeVar("T")
_entries: "OrderedDict[Hashable, Any]" = OrderedDict()
_graphs: "OrderedDict[tuple, int]" = OrderedDict()
_numbers = count()


def graph_key(graph: Graph) -> int:
    """A number standing for the graph's content, its source lines included (Graph's own
    equality leaves them out: two cells that differ only in text would share comments).
    Kept on the graph object, as plan.analysis keeps its tables, so that it is computed
    once per graph; equal graphs get the same number while it is remembered here."""
    number = graph.__dict__.get("_code_cache_key")
    if number is None:
        content = (graph, tuple(n.loc for n in graph.nodes))
        number = _graphs.get(content)
        if number is None:
            number = _graphs[content] = next(_numbers)   # never reused: stale entries just age out
            if len(_graphs) > GRAPHS:
                _graphs.popitem(last=False)
        graph.__dict__["_code_cache_key"] = number
    return number


def cached(key: Hashable, make: Callable[[], T]) -> T:
    """The value remembered under `key`, made (once) when there is none."""
    try:
        _entries.move_to_end(key)
        return _entries[key]
    except KeyError:
        pass
    value = _entries[key] = make()
    if len(_entries) > ENTRIES:
        _entries.popitem(last=False)
    return value
