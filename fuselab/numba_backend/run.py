"""Running a plan kernel by kernel with the compiled Numba kernels.

Arrays travel between kernels flat and C-contiguous (float16 as its uint16 bits); each
kernel's outputs are allocated here and intermediates are dropped after their last
reader. A kernel runs through driver.py: its parallel loops in chunks on Numba's threads
(or on the calling thread with `parallel=False`). Opaque kernels (matmul, sort, ...) run through NumPy, as in the reference
interpreter, and so do the fused kernels the backend does not compile (codegen.numpy_reason:
complex values, zero-size arrays), node by node; arrays of dtypes the kernels have no
type for travel as they are. Importing this module imports Numba.
"""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from ..codegen.cache import cached, graph_key
from ..codegen.model import OpaqueCall
from ..interp import PlanExecutionError, eval_node
from ..plan.model import Plan
from ..recording import recorded
from .codegen import generate
from .compile import Compiled, compile_kernel
from .model import NumbaOptions, NumpyKernel, PyKernel
from .pytypes import is_half, transport


def codes_for(plan: Plan, options: NumbaOptions) -> tuple:
    """Generated code for a plan, remembered in the one cache of generated code
    (fuselab.codegen.cache) under the key the session's code panel uses
    (Session.python_codes): a cell's kernels are generated once, for the panel and the
    run alike, and a re-run generates nothing. The key is the graph's content with its
    source lines (which the kernels' comments quote: Plan equality leaves them out, so a
    cell that differs only in text gets its own comments, and the module the panel shows
    is the one that runs)."""
    return cached(("numba", graph_key(plan.graph), plan.kernels, options), lambda: generate(plan, options))


def flat(a: Any, dtype: np.dtype) -> np.ndarray:
    """`a` as a flat C-contiguous array of `dtype`'s storage type (no copy when it is one)."""
    arr = np.ascontiguousarray(np.asarray(a, dtype=dtype)).reshape(-1)
    return arr.view(np.uint16) if is_half(dtype) else arr


def shaped(a: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A flat storage array back as the node's array: the array it is a flat view of where
    that one has the node's shape and dtype (a kernel's output, fresh(); an input), so
    that a result owns its memory as NumPy's results do, else a reshaped view."""
    want, b = np.dtype(dtype), a
    while isinstance(b.base, np.ndarray):
        b = b.base
        if b.shape == tuple(shape) and b.dtype == want and b.flags.c_contiguous and \
                b.__array_interface__["data"][0] == a.__array_interface__["data"][0]:
            return b
    return (a.view(np.float16) if is_half(dtype) else a).reshape(shape)


def fresh(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A kernel's output buffer: the flat storage view of a new array of the node's shape
    and dtype, which shaped() hands back."""
    return flat(np.empty(shape, dtype), dtype)


class Executable:
    """A plan with every kernel generated and compiled, ready to run many times."""

    def __init__(self, plan: Plan, options: NumbaOptions | None = None) -> None:
        self.plan = plan
        self.options = options or NumbaOptions()
        g = plan.graph
        self.codes = codes_for(plan, self.options)
        self.compiled: list[Compiled | None] = []
        for code in self.codes:
            if isinstance(code, PyKernel):
                self.compiled.append(compile_kernel(code))
            else:
                self.compiled.append(None)
        last: dict[int, int] = {}
        for k, kern in enumerate(plan.kernels):
            for j in kern.inputs:
                last[j] = k
        self._last_read = last
        self.peak_bytes = 0       # outputs and intermediates alive at once, at most (last run)
        self._buffers: dict[int, np.ndarray] = {}

    @property
    def compile_s(self) -> dict[str, float]:
        return {c.kernel.name: c.compile_s for c in self.compiled if c is not None}

    def run(self, inputs: Mapping[str, Any], timings: list[float] | None = None,
            reuse: bool = False, known: Mapping[int, Any] | None = None) -> dict[str, np.ndarray]:
        """Outputs by name, as NumPy arrays of the graph's shapes and dtypes. With
        `timings`, the wall time of each kernel is appended to it. With `reuse`, kernels
        write into the arrays of the previous `reuse` run (for timing: the kernels' work
        without the operating system's first touch of fresh pages, as a GPU memory pool
        spares it; the previous results are overwritten)."""
        g = self.plan.graph
        env: dict[int, np.ndarray] = {}
        originals: dict[int, Any] = {}
        for i in g.input_ids:
            originals[i] = inputs[g.nodes[i].args["name"]]
            env[i] = flat(originals[i], g.nodes[i].dtype)
        keep = g.output_ids
        alive = peak = 0
        for k, (code, comp) in enumerate(zip(self.codes, self.compiled)):
            t0 = time.perf_counter()
            for j in code.inputs:
                if j not in env:
                    raise PlanExecutionError(f"kernel {k} ({code.name}) reads %{j}, which no earlier kernel stored")
            try:
                if known and all(o in known for o in code.outputs):
                    env.update({o: flat(known[o], g.nodes[o].dtype) for o in code.outputs})
                elif comp is None:
                    self._opaque(code, env)   # type: ignore[arg-type]
                else:
                    outs = [self._buffer(o) if reuse else fresh(g.nodes[o].shape, g.nodes[o].dtype)
                            for o in code.outputs]
                    comp.fn(*[env[j] for j in code.inputs], *outs, parallel=self.options.parallel,
                            threads=self.options.threads)
                    env.update(zip(code.outputs, outs))
            except Exception as e:   # the user's line of the kernel's (last) result
                if getattr(e, "fuselab_node", None) is None:
                    e.fuselab_node = code.outputs[-1] if code.outputs else None   # type: ignore[attr-defined]
                raise
            alive += sum(env[o].nbytes for o in code.outputs)
            peak = max(peak, alive)
            if timings is not None:
                timings.append(time.perf_counter() - t0)
            for j in code.inputs:   # free intermediates after their last reader
                if self._last_read.get(j) == k and j not in keep and j not in originals:
                    alive -= env.pop(j).nbytes
        self.peak_bytes = peak
        missing = [name for name, i in g.outputs if i not in env]
        if missing:
            raise PlanExecutionError(f"no kernel stores the output(s) {', '.join(missing)}")
        return {name: originals[i] if i in originals else shaped(env[i], g.nodes[i].dtype, g.nodes[i].shape)
                for name, i in g.outputs}

    def _buffer(self, nid: int) -> np.ndarray:
        n = self.plan.graph.nodes[nid]
        if nid not in self._buffers:
            self._buffers[nid] = np.empty(n.aval.size, transport(n.dtype))
        return self._buffers[nid]

    def _opaque(self, code: OpaqueCall | NumpyKernel, env: dict[int, np.ndarray]) -> None:
        """An opaque kernel, or a fused kernel the backend does not compile: its nodes
        through NumPy, in order."""
        g = self.plan.graph
        local = {j: shaped(env[j], g.nodes[j].dtype, g.nodes[j].shape) for j in code.inputs}
        # an opaque function's own Python warnings (np.nanmedian's "All-NaN slice") are the
        # reference run's to give, at the user's line (measure.execute_checked): kept
        # from showing here, from fuselab's frame, at every run
        with np.errstate(all="ignore"), recorded():
            for i in code.nodes:
                n = g.nodes[i]
                local[i] = eval_node(np, n, [local[j] for j in n.inputs])
        for o in code.outputs:
            n = g.nodes[o]
            if np.size(local[o]) != n.aval.size:   # the trace's shape rule and NumPy disagree: a fuselab bug
                raise PlanExecutionError(
                    f"%{o} ({n.op}): NumPy gave an array of shape {np.shape(local[o])} where the traced graph "
                    f"has {n.shape}; this is a fuselab bug in that op's shape rule: run the cell without "
                    f"%%fuse, or with --backend cpu")
            env[o] = flat(local[o], n.dtype).copy() if local[o].base is not None else flat(local[o], n.dtype)


def execute(plan: Plan, inputs: Mapping[str, Any], options: NumbaOptions | None = None) -> dict[str, np.ndarray]:
    """Compile (or find compiled) and run `plan` once."""
    return Executable(plan, options).run(inputs)
