"""A plan on Dask arrays: every kernel becomes lazy Dask layers whose tasks run the
kernel on one block each (through a chunk runner), so the results are lazy Dask arrays,
as plain Dask code gives, and nothing is computed here.

- POINTWISE: one `blockwise` over the kernel's iteration labels (chunks unified across
  operands; unit axes broadcast).
- ROW: the same on blocks that hold whole rows: operands chunked along the reduced axis
  are rechunked first (recorded, with what it moves).
- REDUCTION: the prologue and each reduction's partial state per block (`blockwise`),
  combined by `dask.array.reduction`'s tree with NumPy's semantics (states.py); an
  epilogue (`x.sum() / n`, `sqrt(var)`) runs as a pointwise stage over the results.
- OPAQUE: Dask's own implementation of the operation.
A kernel with no Dask operand (NumPy arrays, constants) runs eagerly with NumPy, as plain
code would: its results are NumPy arrays.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..errors import FuselabError
from ..interp import eval_node, eval_nodes
from ..ir import Graph
from ..ops import Kind
from ..plan.model import Kernel, Plan, Template, is_free, kernel_from
from .layout import Layout, layout
from .program import block_spec, run_block
from .runners import ChunkRunner, default_runner
from .states import aggregate, combine, pick
from .xp import chunk_module, dask_xp, is_dask_array


class ChunkError(FuselabError):
    """A kernel of the plan cannot run per block."""


@dataclass(frozen=True)
class Rechunk:
    """Blocks of an operand rechunked so that a row kernel's blocks hold whole rows."""

    kernel: int
    node: int
    before: tuple[tuple[int, ...], ...]
    after: tuple[tuple[int, ...], ...]
    nbytes: int          # everything is read and written again (moved between workers)
    tasks: int           # tasks the rechunk adds

    def __str__(self) -> str:
        return (f"k{self.kernel}: %{self.node} rechunked from blocks of {_block(self.before)} to "
                f"{_block(self.after)} (moves {_mib(self.nbytes)}, {self.tasks} tasks)")


@dataclass(frozen=True)
class KernelRun:
    """How one kernel ran on Dask: `how` in words, its block grid (blocks per axis)."""

    index: int
    name: str
    how: str
    grid: tuple[int, ...] = ()


@dataclass(frozen=True)
class DaskRun:
    outputs: dict[str, Any]
    kernels: tuple[KernelRun, ...]
    rechunks: tuple[Rechunk, ...]
    runner: str


def _block(chunks: tuple[tuple[int, ...], ...]) -> str:
    return "(" + ", ".join(str(max(c, default=0)) for c in chunks) + ")"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def execute(plan: Plan, inputs: Mapping[str, Any], runner: ChunkRunner | None = None,
            known: Mapping[int, Any] | None = None) -> DaskRun:
    """Lazy outputs of `plan` by name. `known`: values of nodes already made (graph breaks)."""
    graph = plan.graph
    lazy = lazy_nodes(graph, inputs)
    runner = runner or default_runner(chunk_kind(inputs))
    stored: dict[int, Any] = {i: inputs[graph.nodes[i].args["name"]] for i in graph.input_ids}
    runs: list[KernelRun] = []
    rechunks: list[Rechunk] = []
    for k, kern in enumerate(plan.kernels):
        if known and all(i in known for i in kern.outputs):
            stored.update({i: known[i] for i in kern.outputs})
            runs.append(KernelRun(k, kern.name, "computed at a graph break"))
            continue
        if not any(lazy[i] for i in kern.nodes):
            with np.errstate(all="ignore"):
                local = eval_nodes(np, graph, kern.nodes, stored)
            stored.update({i: local[i] for i in kern.outputs})
            runs.append(KernelRun(k, kern.name, "NumPy (no Dask operand)"))
            continue
        vals = {j: stored[j] for j in kern.inputs}
        step = _KernelStep(graph, k, kern, runner)
        out = step.run(vals)
        # a value made from NumPy arrays alone is a NumPy array in plain code, even when
        # the kernel also makes Dask ones (`w = np.ones(n) * 2; y = x + w`)
        stored.update({i: v.compute() if not lazy[i] and is_dask_array(v) else v for i, v in out.items()})
        runs.append(step.report)
        rechunks.extend(step.rechunks)
    outputs = {name: stored[i] for name, i in graph.outputs}
    return DaskRun(outputs, tuple(runs), tuple(rechunks), runner.name)


def lazy_nodes(graph: Graph, inputs: Mapping[str, Any]) -> list[bool]:
    """Which nodes' values are Dask arrays in plain Dask code: those depending on one."""
    lazy = [False] * len(graph.nodes)
    for i, n in enumerate(graph.nodes):
        lazy[i] = is_dask_array(inputs[n.args["name"]]) if n.op == "input" else any(lazy[j] for j in n.inputs)
    return lazy


def chunk_kind(inputs: Mapping[str, Any]) -> str:
    """"cupy" when any Dask input has CuPy chunks, else "numpy"."""
    for v in inputs.values():
        if is_dask_array(v) and chunk_module(v).__name__ == "cupy":
            return "cupy"
    return "numpy"


def check_plan(plan: Plan) -> list[tuple[int, Layout]]:
    """The kernels of `plan` that cannot run per block, with their layouts (reasons)."""
    bad = []
    for k, kern in enumerate(plan.kernels):
        for stage in stages(plan.graph, kern):
            if stage.template is Template.OPAQUE or not any(not is_free(plan.graph, i) for i in stage.nodes):
                continue
            lay = layout(plan.graph, stage)
            if not lay.ok:
                bad.append((k, lay))
                break
    return bad


def stages(graph: Graph, kern: Kernel) -> tuple[Kernel, ...]:
    """A REDUCTION kernel as (prologue and reductions, epilogue): the epilogue reads the
    reductions' results, which exist only after the blocks' states are combined."""
    if kern.template is not Template.REDUCTION:
        return (kern,)
    reduces = [i for i in kern.nodes if graph.nodes[i].kind is Kind.REDUCE]
    after: set[int] = set(reduces)
    for i in kern.nodes:
        if any(j in after for j in graph.nodes[i].inputs):
            after.add(i)
    epilogue = [i for i in kern.nodes if i in after and i not in reduces and not is_free(graph, i)]
    first = [i for i in kern.nodes if i not in after and not is_free(graph, i)] + reduces
    if not epilogue:
        return (kern,)
    reads = {k for i in epilogue for j in graph.nodes[i].inputs for k in _through_views(graph, j)}
    a_out = [i for i in first if i in kern.outputs or i in reads]
    # (the stages are laid out per block here, never generated: no iteration space)
    a = kernel_from(graph, first, a_out, Template.REDUCTION, None)
    b = kernel_from(graph, epilogue, [i for i in kern.outputs if i in epilogue], Template.POINTWISE, None)
    return (a, b)


def _through_views(graph: Graph, j: int) -> list[int]:
    """j and the nodes it views (a reshape of a reduction's result reads the reduction)."""
    out = [j]
    while is_free(graph, j) and graph.nodes[j].inputs:
        j = graph.nodes[j].inputs[0]
        out.append(j)
    return out


# ---------------------------------------------------------------------------
# One kernel
# ---------------------------------------------------------------------------

class _KernelStep:
    def __init__(self, graph: Graph, index: int, kern: Kernel, runner: ChunkRunner) -> None:
        self.graph, self.index, self.kern, self.runner = graph, index, kern, runner
        self.rechunks: list[Rechunk] = []
        self.report = KernelRun(index, kern.name, "")

    def run(self, vals: dict[int, Any]) -> dict[int, Any]:
        import dask.array as da
        g, kern = self.graph, self.kern
        if kern.template is Template.OPAQUE:  # its views and constants too: Dask's own
            env = dict(vals)
            for i in kern.nodes:
                env[i] = eval_node(dask_xp(), g.nodes[i], [env[j] for j in g.nodes[i].inputs])
            out = {i: env[i] for i in kern.outputs}
            self.report = KernelRun(self.index, kern.name, "Dask's own implementation",
                                    next((v.numblocks for v in out.values() if is_dask_array(v)), ()))
            return out
        vals = {j: v if is_dask_array(v) else da.asarray(v) for j, v in vals.items()}
        env = dict(vals)
        hows, grid = [], ()
        for stage in stages(g, kern):
            lay = layout(g, stage)
            if not lay.ok:
                raise chunk_error(g, self.index, kern, lay)
            values, blocks = self._stage(stage, lay, env)
            env.update(values)
            hows.append(_HOW[stage.template])
            grid = grid or blocks
        self.report = KernelRun(self.index, kern.name, ", then ".join(hows), grid)
        return {i: env[i] for i in kern.outputs}

    def _stage(self, stage: Kernel, lay: Layout, env: dict[int, Any]) -> tuple[dict[int, Any], tuple[int, ...]]:
        """The stage's values (lazy), and its block grid."""
        import dask.array as da
        g = self.graph
        out: dict[int, Any] = {}
        for i in lay.prelude:  # views of the operands, full, arange: Dask's own, lazy
            out[i] = env[i] = eval_node(dask_xp(), g.nodes[i], [env[j] for j in g.nodes[i].inputs])
        body = set(lay.body)
        stored = [i for i in stage.outputs if i in body and g.nodes[i].kind is not Kind.REDUCE] \
            if stage.template is Template.REDUCTION else [i for i in stage.outputs if i in body]
        reductions = [i for i in lay.body if g.nodes[i].kind is Kind.REDUCE] \
            if stage.template is Template.REDUCTION else []
        if not stored and not reductions:
            return out, ()
        letters = _Letters()
        operands = [env[j] for j in lay.operands]
        inds = [letters.of(lay.of(j)) for j in lay.operands]
        if stage.template is Template.ROW:
            operands = self._whole_rows(lay, operands, inds, letters)
        pairs = [x for pair in zip(operands, inds) for x in pair]
        chunkss, operands = da.core.unify_chunks(*pairs)
        position_labels = [c for c in lay.reduced] if reductions else []
        positions = [da.arange(sum(chunkss[letters.name(c)]), chunks=(chunkss[letters.name(c)],))
                     for c in position_labels]
        spec = block_spec(g, lay, stored, reductions, position_labels)
        space, new_axes = letters.output(lay.space)
        xp = chunk_module(operands[0]) if operands else np
        fn = functools.partial(run_block, spec, self.runner, len(positions))
        args = [x for pair in zip(operands, inds) for x in pair] + \
            [x for p, c in zip(positions, position_labels) for x in (p, (letters.name(c),))]
        name = f"k{self.index}-{self.kern.name}-" + _token(spec.key, self.runner.name, *[a.name for a in operands])
        blocks = da.blockwise(fn, space, *args, concatenate=True, new_axes=new_axes, name=name,
                              meta=xp.empty((0,) * len(space), np.float64))
        for k, i in enumerate(stored):
            out[i] = _take(blocks, space, k, letters.output(lay.of(i)), xp, g.nodes[i].dtype, f"{name}-{i}")
        for q, (_, p) in enumerate(spec.partials):
            i = p.node
            shape = g.nodes[i].shape
            out[i] = da.reduction(blocks, functools.partial(pick, index=len(stored) + q),
                                  functools.partial(aggregate, p=p), axis=p.axes, keepdims=p.keepdims,
                                  dtype=p.dtype, combine=functools.partial(combine, p=p), concatenate=False,
                                  meta=xp.empty((0,) * len(shape), p.dtype), name=f"{name}-{g.nodes[i].op}{i}")
        return out, blocks.numblocks

    def _whole_rows(self, lay: Layout, operands: list[Any], inds: list[tuple], letters: "_Letters") -> list[Any]:
        """Rechunk operands so that every block holds whole rows (the reduced axis in
        one chunk), keeping blocks about as large as the largest operand's were."""
        rows = {letters.name(c) for c in lay.reduced}
        split = [k for k, (x, ind) in enumerate(zip(operands, inds))
                 if any(len(x.chunks[d]) > 1 for d, a in enumerate(ind) if a in rows)]
        if not split:
            return operands
        big = max(split, key=lambda k: operands[k].nbytes)
        x, ind = operands[big], inds[big]
        limit = max(int(np.prod([max(c, default=1) for c in x.chunks])) * x.dtype.itemsize, 1)
        target = x.rechunk({d: -1 if a in rows else "auto" for d, a in enumerate(ind)}, block_size_limit=limit)
        chunks_of = {a: c for a, c in zip(ind, target.chunks)}
        out = list(operands)
        for k, (x, ind) in enumerate(zip(operands, inds)):
            want = tuple(chunks_of.get(a, c) if a in chunks_of and sum(chunks_of[a]) == sum(c) else c
                         for a, c in zip(ind, x.chunks))
            if want == x.chunks:
                continue
            y = x.rechunk(want)
            before = set(x.__dask_graph__().layers)
            tasks = sum(len(layer) for name, layer in y.__dask_graph__().layers.items() if name not in before)
            self.rechunks.append(Rechunk(self.index, lay.operands[k], x.chunks, y.chunks, x.nbytes, tasks))
            out[k] = y
        return out


_HOW = {Template.POINTWISE: "blockwise", Template.ROW: "blockwise over whole rows",
        Template.REDUCTION: "partial reductions per block, combined in a tree"}


class _Letters:
    """blockwise indices: one per label class, a fresh one per unit axis."""

    def __init__(self) -> None:
        self._fresh = 0

    def name(self, c: int) -> str:
        return f"l{c}"

    def _new(self) -> str:
        self._fresh += 1
        return f"u{self._fresh}"

    def of(self, labels: tuple) -> tuple[str, ...]:
        return tuple(self._new() if c is None else self.name(c) for c in labels)

    def output(self, labels: tuple) -> tuple[tuple[str, ...], dict[str, int]]:
        ind = self.of(labels)
        return ind, {a: 1 for a, c in zip(ind, labels) if c is None}


def _take(blocks: Any, space: tuple, k: int, target: tuple, xp: Any, dtype: np.dtype, name: str) -> Any:
    """Stored value k of every block, as an array over its own labels (the space's other
    axes hold one block each: a row kernel's reduced axis)."""
    import dask.array as da
    ind, new_axes = target
    return da.blockwise(functools.partial(_unwrap, k), ind, blocks, space, concatenate=False, new_axes=new_axes,
                        meta=xp.empty((0,) * len(ind), dtype), name=name + "-" + _token(blocks.name, k))


def _unwrap(k: int, block: Any) -> Any:
    # Axes of the space the value has not come as lists of blocks: a row kernel's reduced
    # axis (one block: whole rows), or axes a smaller value broadcast over (`t = s > 0` of
    # a 0-d `s` beside `y = where(t, s, x)`), along which every block computed the same
    # values: any one of them is the value.
    while isinstance(block, list):
        block = block[0]
    return block[k]


def _token(*parts: Any) -> str:
    from dask.base import tokenize
    return tokenize(*parts)


def chunk_error(graph: Graph, index: int, kern: Kernel, lay: Layout) -> ChunkError:
    node = lay.culprit
    n = graph.nodes[node] if node is not None else None
    producer = n.inputs[0] if n is not None and n.inputs else None
    hint = (f"cut it out of the kernel: session.split(({producer}, {node})), or run with --plan unfused"
            if producer is not None else "run with --plan unfused")
    return ChunkError(f"kernel k{index} ({kern.name}) cannot run per Dask block: %{node} ({n.op if n else '?'}) "
                      f"{lay.reason}", n.loc if n is not None else None, hint)
