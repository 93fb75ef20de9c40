"""Reference semantics: run a graph or a plan with an array module (NumPy or CuPy).

This is the test oracle and the CPU backend. Running a plan materialises only each
kernel's outputs, so a wrong plan (a kernel reading a value nobody stored) fails here
exactly as it would on the GPU.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .ir import Graph, Node
from .ops import Kind, OPS
from .recording import give_at, library_line, recorded


class PlanExecutionError(RuntimeError):
    pass


def slice_key(start: tuple[int, ...], step: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """Python slices that select `shape` elements from `start` with `step` per axis."""
    key = []
    for s, st, n in zip(start, step, shape):
        if n == 0:
            key.append(slice(0, 0))
            continue
        stop = s + n * st
        key.append(slice(s, stop if stop >= 0 else None, st))
    return tuple(key)


def eval_node(xp: ModuleType, node: Node, vals: list[Any], out: Any = None) -> Any:
    """The value of one node given its inputs' values. `out`: a dead array of the
    result's shape and dtype that an element-wise op may write into (the values are the
    same; NumPy's own expressions reuse their temporaries the same way)."""
    a = node.args
    op = node.op
    kind = OPS[op].kind
    if op == "const":
        return xp.asarray(a["value"], dtype=node.dtype)
    if op == "full":
        return xp.full(node.shape, a["value"], dtype=node.dtype)
    if op == "arange":
        out = xp.arange(a["start"], a["stop"], a["step"], dtype=node.dtype)
        # (cut only where it is longer: np.arange's array owns its memory, a slice would not)
        return out if out.shape[0] == node.shape[0] else out[: node.shape[0]].copy()
    if op == "astype":
        return vals[0].astype(node.dtype)
    if op == "where":
        out = xp.where(vals[0], vals[1], vals[2])
    elif kind is Kind.ELEMWISE:
        ufunc = getattr(xp, OPS[op].xp_name)
        vals = [v if v.dtype == ct else v.astype(ct) for v, ct in zip(vals, node.operand_dtypes)]
        if out is not None and out.shape == node.shape and out.dtype == node.dtype:
            return ufunc(*vals, out=out)
        out = ufunc(*vals)
    elif op == "transpose":
        return xp.transpose(vals[0], a["perm"])
    elif op == "slice":
        return vals[0][slice_key(a["start"], a["step"], node.shape)]
    elif op == "reshape":
        if "index" in a:   # basic indexing with new axes (a tracer's view ops, never a graph's)
            return vals[0][tuple(None if c < 0 else slice(None) if c else 0 for c in a["index"])]
        return xp.reshape(vals[0], node.shape)
    elif op == "broadcast_to":
        return xp.broadcast_to(vals[0], node.shape)
    elif kind is Kind.REDUCE:
        out = _reduce(xp, node, vals[0])
    elif op == "opaque":
        kwargs = dict(a["kwargs"])
        out = a["fn"].call(xp, *vals, **kwargs)
        if "index" in a:
            out = out[a["index"]]
    else:  # pragma: no cover - the op table and this function must agree
        raise NotImplementedError(op)
    out = xp.asarray(out)
    if out.dtype != node.dtype:
        out = out.astype(node.dtype)
    return out


def _reduce(xp: ModuleType, node: Node, x: Any) -> Any:
    a = node.args
    axes, keepdims = a["axes"], a["keepdims"]
    if node.op in ("argmax", "argmin"):
        fn = getattr(xp, node.op)
        if a["flat"]:
            out = fn(x)
            # (an array of its own, as NumPy's keepdims result is, not a view of the 0-d one)
            return xp.reshape(out, node.shape).copy() if keepdims else out
        return fn(x, axis=axes[0], keepdims=keepdims)
    if node.op in ("sum", "prod"):
        return getattr(xp, node.op)(x, axis=axes, keepdims=keepdims, dtype=node.dtype)
    if node.op == "var":
        # its Python-level warning ("Degrees of freedom <= 0") is the trace's to give, at
        # the user's line; its floating-point ones are given again as they came
        if x.dtype.kind in "biu":
            # NumPy subtracts a float mean from the integers, the same as converting
            # them first; CuPy's var(dtype=float64) of bools took the mean as a bool
            # (0.7 for 0.21 on an H200, CuPy 14) and lost digits for uint8
            x = x.astype(node.dtype)
        with recorded() as caught:
            v = xp.var(x, axis=axes, keepdims=keepdims, dtype=node.dtype, ddof=a["ddof"])
        for w in caught:
            if not str(w.message).startswith("Degrees of freedom"):
                give_at(str(w.message), w.category, w.filename, w.lineno)
        return v
    return getattr(xp, node.op)(x, axis=axes, keepdims=keepdims)


def eval_nodes(xp: ModuleType, graph: Graph, nodes: Sequence[int], stored: Mapping[int, Any],
               on_warning: Callable[[int, warnings.WarningMessage], None] | None = None) -> dict[int, Any]:
    """Evaluate `nodes` (ascending ids) reading anything else from `stored`: one
    kernel's values, as eager NumPy / CuPy computes them (views stay views). With
    `on_warning`, the warnings each node's evaluation gives are recorded instead of shown
    and handed to it with the node's id (the runtime's library calls: CuPy's warnings are
    the cell's, at the node's line, and a rerun's are nobody's)."""
    local: dict[int, Any] = {}
    for i in nodes:
        n = graph.nodes[i]
        args = [local[j] if j in local else stored[j] for j in n.inputs]
        if on_warning is None:
            local[i] = eval_node(xp, n, args)
            continue
        with recorded() as caught:
            local[i] = eval_node(xp, n, args)
        for w in caught:
            on_warning(i, w)
    return local


@dataclass(frozen=True)
class PythonWarning:
    """A warning an opaque function's own Python code gave (np.nanmean's "Mean of empty
    slice"): without a `filename` the caller places it at the user's line, as plain
    execution would; with one, at that line of the library's file (cupy.nanmax's, from
    cupy/_statistics/order.py). `fp`: a floating-point warning of NumPy's own Python code
    (np.var's divisions in numpy/_core/_methods.py), which np.errstate governs."""

    message: str
    category: type
    filename: str | None = None
    lineno: int = 0
    fp: bool = False


class FPKind(str):
    """A floating-point error kind ("overflow"), with the flag NumPy hands the function of
    np.errstate(all='call') with it: the bits of every error the operation met; `label`,
    where NumPy names the operation otherwise than fuselab's op would (a.trace()'s
    overflow is "in reduce", np.inner's "in dot")."""

    flag: int
    label: str | None

    def __new__(cls, kind: str, flag: int, label: str | None = None) -> "FPKind":
        k = super().__new__(cls, kind)
        k.flag = flag
        k.label = label
        return k


# (node, "divide by zero" / "overflow" / ... (an FPKind) or a PythonWarning)
FPErrorHook = Callable[[int, "str | PythonWarning"], None]


def evaluate_node(xp: ModuleType, i: int, node: Node, vals: list[Any], on_fp_error: FPErrorHook | None,
                  out: Any = None) -> Any:
    """eval_node, reporting the floating-point errors NumPy meets (NumPy would warn about
    them, at the user's line: the caller decides)."""
    if on_fp_error is None:
        return eval_node(xp, node, vals, out)
    if node.op == "var":
        return _evaluate_var(xp, i, node, vals, on_fp_error, out)
    kinds: list[FPKind] = []
    exact = _INT_ARITHMETIC[node.op](*(int(v) for v in vals)) \
        if node.op in _INT_ARITHMETIC and not node.shape and node.dtype.kind in "iu" else None
    caught: list = []
    with np.errstate(all="call", call=lambda kind, flag: kinds.append(FPKind(kind, flag))), \
            recorded() as caught:
        out = eval_node(xp, node, vals, out)
    for w in caught if node.op == "opaque" else ():
        on_fp_error(i, PythonWarning(str(w.message), w.category, *library_line(w)))
    if exact is not None and exact != int(out):
        kinds.append(FPKind("overflow", 2))  # NumPy warns about this for integer scalars (not arrays)
    located, words = _numpy_located_fp_warnings(xp, node, vals) if kinds and node.op == "opaque" else ({}, {})
    for kind in dict.fromkeys(kinds):
        if str(kind) in words:
            kind = FPKind(kind, kind.flag, words[str(kind)])
        for w in located.get(str(kind), [kind]):
            on_fp_error(i, w)
    return out


_FP_MESSAGE = re.compile(r"(divide by zero|overflow|underflow|invalid value) encountered in ")


def _numpy_located_fp_warnings(xp: ModuleType, node: Node,
                               vals: list[Any]) -> tuple[dict[str, list[PythonWarning]], dict[str, str]]:
    """The floating-point warnings an opaque function that met errors gives from its own
    Python code, by kind: NumPy's words and line (np.diff of infinities: "invalid value
    encountered in subtract", from numpy/lib/_function_base_impl.py, not "in diff" at the
    user's line); and, for a kind warned at the caller's line (the function runs its
    ufunc in C), NumPy's word for the operation (a.trace(): "reduce", np.inner: "dot").
    Found by running it again under np.errstate(all='warn'), recording every warning.
    Functions drawing random numbers are not run twice."""
    if "random" in str(getattr(node.args.get("fn"), "name", "")):
        return {}, {}
    found: dict[str, list[PythonWarning]] = {}
    words: dict[str, str] = {}
    with recorded(fresh=True) as caught, np.errstate(all="warn"):
        eval_node(xp, node, vals)
    for w in caught:
        m = _FP_MESSAGE.match(str(w.message))
        if not m or not issubclass(w.category, RuntimeWarning):
            continue
        where = library_line(w)
        if where:
            found.setdefault(m.group(1), []).append(PythonWarning(str(w.message), w.category, *where, fp=True))
        else:
            words.setdefault(m.group(1), str(w.message)[m.end():])
    return found, words


def _evaluate_var(xp: ModuleType, i: int, node: Node, vals: list[Any], on_fp_error: FPErrorHook,
                  out: Any) -> Any:
    """np.var's steps (numpy/_core/_methods.py _var: the mean's division, the deviations,
    their sum, the final division) warn from lines of their own: an empty slice warns
    "invalid value encountered in divide" twice, and Python shows each NumPy line once a
    session. Each is reported with NumPy's file and line."""
    with np.errstate(all="warn"), recorded() as caught:
        out = eval_node(xp, node, vals, out)
    for w in caught:
        if issubclass(w.category, RuntimeWarning) and " encountered in " in str(w.message):
            on_fp_error(i, PythonWarning(str(w.message), w.category, str(w.filename), int(w.lineno), fp=True))
    return out


_INT_ARITHMETIC = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b}


def run_graph(graph: Graph, inputs: Mapping[str, Any], xp: ModuleType = np,
              on_fp_error: FPErrorHook | None = None) -> dict[str, Any]:
    """Evaluate every node; return the named outputs."""
    env: list[Any] = [None] * len(graph.nodes)
    with np.errstate(all="ignore"):
        for i, n in enumerate(graph.nodes):
            if n.op == "input":
                env[i] = inputs[n.args["name"]]
            else:
                env[i] = evaluate_node(xp, i, n, [env[j] for j in n.inputs], on_fp_error)
    return {name: env[i] for name, i in graph.outputs}


def _donor(graph: Graph, kern: Any, i: int, local: Mapping[int, Any], last_use: Mapping[int, int],
           known: Mapping[int, Any]) -> Any:
    """A value this kernel computed, read for the last time by node i, whose memory i's
    element-wise result may take: not stored, not an input, not viewed by another node,
    not a value given (`known`: one object that every kernel computing that node takes,
    and that another kernel may have stored as its output)."""
    n = graph.nodes[i]
    if n.kind is not Kind.ELEMWISE or n.op in ("where", "astype"):
        return None
    for j in n.inputs:
        v = local[j]
        if last_use.get(j) == i and j not in kern.outputs and j not in kern.inputs and j not in known and \
                isinstance(v, np.ndarray) and v.ndim and v.base is None and v.flags.writeable and \
                graph.nodes[j].op not in ("const", "full", "input") and \
                not any(graph.nodes[u].kind is Kind.INJECTIVE for u in graph.users[j]):
            return v
    return None


def run_plan(plan, inputs: Mapping[str, Any], xp: ModuleType = np,
             on_fp_error: FPErrorHook | None = None, known: Mapping[int, Any] | None = None) -> dict[str, Any]:
    """Evaluate kernel by kernel; only kernel outputs survive a kernel boundary.
    `known`: values of nodes already computed by this interpreter (at a graph break),
    used instead of computing them again."""
    known = known or {}
    graph = plan.graph
    stored: dict[int, Any] = {i: inputs[graph.nodes[i].args["name"]] for i in graph.input_ids}
    with np.errstate(all="ignore"):
        for k, kern in enumerate(plan.kernels):
            local: dict[int, Any] = {}
            last_use = {j: i for i in kern.nodes for j in graph.nodes[i].inputs}
            for j in kern.inputs:
                if j not in stored:
                    raise PlanExecutionError(
                        f"kernel {k} ({kern.name}) reads %{j}, which no earlier kernel stored")
                local[j] = stored[j]
            for i in kern.nodes:
                n = graph.nodes[i]
                try:
                    vals = [local[j] for j in n.inputs]
                except KeyError as e:
                    raise PlanExecutionError(
                        f"kernel {k} ({kern.name}) computes %{i} from %{e.args[0]}, "
                        "which is neither in the kernel nor one of its inputs") from None
                if i in known:
                    local[i] = known[i]
                    continue
                try:
                    local[i] = evaluate_node(xp, i, n, vals, on_fp_error, _donor(graph, kern, i, local, last_use, known))
                except Exception as e:
                    e.fuselab_node = i  # type: ignore[attr-defined]  (the cell's line, for the error)
                    raise
            for i in kern.outputs:
                stored[i] = local[i]
    missing = [name for name, i in graph.outputs if i not in stored]
    if missing:
        raise PlanExecutionError(f"no kernel stores the output(s) {', '.join(missing)}")
    return {name: stored[i] for name, i in graph.outputs}
