"""Tables: values a kernel computes from small (broadcast) operands alone, computed once
per block into shared memory instead of at every element.

A fused kernel's small values (a mean's finish `sum / n` cast to float16, a batch-norm's
`sqrt(var / n + eps)`) are indexed by the few positions of their own shape, but the
element function would recompute them for every element that reads them; NVVM does not
merge that work across a loop's iterations or a vector's unrolled elements. A table
holds each such node's values (at most TABLE_MAX in all): the block's threads fill it
first, and from then on the element functions read the node from shared memory
(ctx.tables, element.build). The pointwise and reduction templates use them.
"""
from __future__ import annotations

from . import element
from . import index as ix
from .context import KernelContext
from .emit import array_name
from .types import storage_type
from ..plan.model import is_free

TABLE_MAX = 1024   # elements of a kernel's tables, which every block computes


def table_nodes(ctx: KernelContext) -> list[int]:
    """The values the kernel computes from smaller-than-its-space operands alone and
    reads at full size (views and constants looked through), where they are few.
    A float16 batch-norm's (x - mu) / sqrt(var / n + eps) took 145 us for 27.5M elements
    with the variance's finish (a float64 division, casts, a float16 add and square
    root) done at every element (H200, 2026-12-03)."""
    g, k = ctx.graph, ctx.kernel
    n = ix.prod(ctx.space.shape)
    members = set(k.nodes)
    small = {v for v in members if g.nodes[v].aval.size < n}
    found: dict[int, None] = {}

    def reach(v: int) -> None:
        if v not in small:
            return
        if is_free(g, v):
            for u in g.nodes[v].inputs:
                reach(u)
        else:
            found[v] = None
    for u in members - small:
        for v in g.nodes[u].inputs:
            reach(v)
    tables = sorted(found)
    return tables if sum(g.nodes[v].aval.size for v in tables) <= TABLE_MAX else []


def set_up_tables(ctx: KernelContext, tables: list[int], thread: str = "threadIdx.x",
                  threads: str = "blockDim.x") -> tuple[list[str], list[str]]:
    """Each table's fill function (helpers) and the kernel's first lines: the block's
    threads (`thread` of `threads`: a 2-D block's linear index) fill the tables, then
    wait for one another. From then on the element functions read those nodes from
    shared memory. The fills must run before any thread of the block leaves."""
    g = ctx.graph
    helpers: list[str] = []
    fills: list[str] = []
    for f in tables:
        nd = g.nodes[f]
        tab = ctx.names.fresh(f"tab_{array_name(g, f)}")
        t = ix.Var(ctx.names.fresh("t"), nd.aval.size)
        fn = element.build(ctx, ix.delinearize(ix.Affine.of(t), nd.shape), (f,), own=True,
                           name=ctx.names.fresh(f"{ctx.name}_{tab}"), what=f", a value of its table {tab}")
        helpers += [*fn.lines, ""]
        fills += [f"__shared__ __align__(16) {storage_type(nd.dtype)} {tab}[{nd.aval.size}];",
                  f"for (index_t {t.name} = {thread}; {t.name} < {nd.aval.size}; {t.name} += {threads}) {{",
                  f"    {fn.name}({', '.join(element.scalar_args(ctx, fn) + [f'{tab}[{t.name}]'])});", "}"]
        ctx.tables[f] = ctx.in_ptr[f] = tab   # the fills compute their nodes (`own`), whatever is tabled
    return helpers, [*fills, "__syncthreads();   // the tables are filled"]


def tables_note(ctx: KernelContext, tables: list[int]) -> str:
    """The kernel's note on its tables (KernelCode.notes)."""
    g = ctx.graph
    return (f"tables: {', '.join(array_name(g, f) for f in tables)} (values of broadcast operands alone, "
            f"{sum(g.nodes[f].aval.size for f in tables)} in all) computed once per block")
