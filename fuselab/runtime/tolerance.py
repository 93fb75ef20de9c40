"""The slack of a backend's check: how far a result may be from the reference's because a
float sum (or variance) was added in another order, or a transcendental rounded by
another library, judged where that value is computed, not at the result's own magnitude.

The documented freedom (README, "The Numba backend": reduction order) is that a sum is
within a few units of rounding *relative to the sum of magnitudes* of NumPy's. Where
values cancel (`t - t.mean()`, `x.sum() + (-x).sum()`, the variance of a constant),
the exact result is 0 or nearly so and both implementations give rounding residue of
that magnitude, while the check's relative tolerance (fuselab.runtime.verify.compare_one:
rtol times the largest |NumPy value| of the output) is rtol times that residue, so equally
good results failed. The slack here is what the documented tolerance allows after the
values that follow the reduction are computed from it:

* a float `sum` node r may be off by D = rtol * sum(|x|) over its reduced elements (per
  output element; a mean is a sum divided, so its slack is rtol * mean|x|);
* a float `var` node (one-pass Welford against NumPy's two passes) by
  D = rtol * var + (rtol * mean|x|)**2: its relative rounding plus the square of its
  mean's slack (the deviations are taken from a mean that may be off by that much);
* a float transcendental (exp, tanh, power, ...: values libraries round differently, an
  ulp or so apart) by D = ULPS_APART units in the last place of its value: cancelling
  after it (`np.log(np.expm1(sp)) - x`) turns an ulp into a large part of the result;
* each output's slack is the sum over those values it depends on of how far it moves
  when r alone is replaced by r + D and by r - D (the graph evaluated by NumPy again from
  r on, every other value as computed), the larger of the two.

Only outputs that fail the plain relative check are judged again this way (the common
case costs nothing), with rtol that of the reduction's least precise float (as
output_rtols). The slack only adds to the tolerance; a NaN or inf that the
perturbation itself produces (a square root of a variance pushed below zero is avoided by
clipping at 0) adds none.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..interp import eval_node
from ..ir import Graph
from ..plan.model import Plan
from ..ops import OPS
from .verify import RTOL, Check, OutputCheck, compare_one

# reductions whose float results the backend adds in another order than NumPy's
ORDER_FREE = ("sum", "var")


# element-wise functions whose float results differ between libraries by an ulp or so
# (NumPy's SIMD float32 power and exp on AVX-512 against libm's, CUDA's, the Numba
# backend's own); sqrt is correctly rounded everywhere
_LIBRARY_ROUNDED = frozenset(name for name, op in OPS.items() if op.transcendental and name != "sqrt")


def _moving(graph: Graph, above: set[int], known: Mapping[int, Any]) -> list[int]:
    """The float nodes on the outputs' paths whose values libraries round differently: an
    order-free reduction's, a transcendental's (ascending)."""
    return [i for i in sorted(above) if i not in known and graph.nodes[i].dtype.kind == "f"
            and (graph.nodes[i].op in ORDER_FREE or graph.nodes[i].op in _LIBRARY_ROUNDED)]


# how many units in the last place a transcendental may be from NumPy's (README,
# "Transcendentals": within 3 ulp for exp, 2 for tanh, 1 for expm1; libm's within 1 or 2)
ULPS_APART = 4


def _move_by(graph: Graph, env: list[Any], r: int, rtol: float) -> np.ndarray:
    """How far node r's value may be from NumPy's (float64, finite): a reduction's slack,
    a transcendental's ULPS_APART units in the last place of its value."""
    n = graph.nodes[r]
    with np.errstate(all="ignore"):
        if n.op in ORDER_FREE:
            d = reduction_slack(graph, r, env[n.inputs[0]], env[r], rtol)
        else:
            value = np.asarray(env[r])
            d = ULPS_APART * np.abs(np.spacing(value).astype(np.float64))
        return np.where(np.isfinite(d), d, 0.0)


def node_rtols(graph: Graph) -> list[float]:
    """Per node: the tolerance of the least precise float dtype it is computed from."""
    loosest: list[float] = []
    for n in graph.nodes:
        own = RTOL.get(n.dtype, 0.0) if n.dtype.kind == "f" else 0.0
        loosest.append(max([own, *(loosest[j] for j in n.inputs)]))
    return loosest


def _values(graph: Graph, inputs: Mapping[str, Any], known: Mapping[int, Any] | None) -> list[Any]:
    """Every node's value, as eager NumPy computes it (values taken at graph breaks as given)."""
    known = known or {}
    env: list[Any] = [None] * len(graph.nodes)
    with np.errstate(all="ignore"):
        for i, n in enumerate(graph.nodes):
            if i in known:
                env[i] = np.asarray(known[i])
            elif n.op == "input":
                env[i] = np.asarray(inputs[n.args["name"]])
            else:
                env[i] = eval_node(np, n, [env[j] for j in n.inputs])
    return env


def _descendants(graph: Graph, r: int, known: Mapping[int, Any]) -> list[int]:
    """The nodes whose values follow from r's (ascending), stopping at values given."""
    moved = {r}
    out = []
    for i in range(r + 1, len(graph.nodes)):
        if i not in known and any(j in moved for j in graph.nodes[i].inputs):
            moved.add(i)
            out.append(i)
    return out


def _ancestors(graph: Graph, ids: Sequence[int]) -> set[int]:
    seen: set[int] = set()
    todo = list(ids)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(graph.nodes[i].inputs)
    return seen


def reduction_slack(graph: Graph, node: int, x: np.ndarray, value: np.ndarray, rtol: float) -> np.ndarray:
    """D of reduction `node` (see the module docstring) per output element, float64."""
    n = graph.nodes[node]
    axes, keepdims = n.args["axes"], n.args["keepdims"]
    with np.errstate(all="ignore"):
        mag = np.sum(np.abs(np.asarray(x, dtype=np.float64)), axis=axes, keepdims=keepdims)
        if n.op == "var":
            count = max(1, int(np.prod([np.shape(x)[a] for a in axes], dtype=np.int64)))
            d = rtol * np.abs(np.asarray(value, dtype=np.float64)) + (rtol * mag / count) ** 2
        else:
            d = rtol * mag
    return np.where(np.isfinite(d), d, 0.0)


def _moving_for(graph: Graph, names: Sequence[str], known: Mapping[int, Any] | None
                ) -> tuple[dict[int, Any], dict[str, int], list[int]]:
    """(the values taken at graph breaks, the outputs named by node, the library-rounded
    values their results depend on: _moving) for output_slacks and output_alternatives."""
    known = dict(known or {})
    out_ids = dict(graph.outputs)
    wanted = {name: out_ids[name] for name in names}
    return known, wanted, _moving(graph, _ancestors(graph, list(wanted.values())), known)


def output_slacks(graph: Graph, names: Sequence[str], inputs: Mapping[str, Any],
                  known: Mapping[int, Any] | None = None) -> dict[str, np.ndarray]:
    """Per output named: the slack of every element (float64, the output's shape), zero
    where no order-free reduction or transcendental is on its path."""
    known, wanted, moving = _moving_for(graph, names, known)
    rt = node_rtols(graph)
    if not moving:
        return {name: np.zeros(graph.nodes[i].shape, np.float64) for name, i in wanted.items()}
    env = _values(graph, inputs, known)
    slack = {name: np.zeros(np.shape(env[i]), np.float64) for name, i in wanted.items()}
    for r in moving:
        d = _move_by(graph, env, r, rt[r])
        if not np.any(d):
            continue
        after = _descendants(graph, r, known)
        hits = {name: i for name, i in wanted.items() if i == r or i in after}
        if not hits:
            continue
        moved: dict[str, np.ndarray] = {name: np.zeros(np.shape(env[i]), np.float64) for name, i in hits.items()}
        for local in _shifted_runs(graph, env, r, d, after):
            with np.errstate(all="ignore"):
                for name, i in hits.items():
                    delta = np.abs(np.asarray(local[i], dtype=np.float64) - np.asarray(env[i], dtype=np.float64))
                    moved[name] = np.maximum(moved[name], np.where(np.isfinite(delta), delta, 0.0))
        for name in hits:
            slack[name] = slack[name] + moved[name]
    return slack


def _shifted_runs(graph: Graph, env: list[Any], r: int, d: np.ndarray, after: list[int]) -> list[list[Any]]:
    """Every node's value again with node r's moved by +d and by -d (a variance kept at
    or above 0), the nodes `after` it evaluated from there, as eager NumPy would."""
    n = graph.nodes[r]
    runs = []
    with np.errstate(all="ignore"):
        b64 = np.asarray(env[r], dtype=np.float64)
        for shifted in (b64 + d, b64 - d):
            if n.op == "var":
                shifted = np.maximum(shifted, 0.0)
            local = list(env)
            local[r] = np.asarray(shifted).astype(n.dtype)
            for i in after:
                local[i] = eval_node(np, graph.nodes[i], [local[j] for j in graph.nodes[i].inputs])
            runs.append(local)
    return runs


def output_alternatives(graph: Graph, names: Sequence[str], inputs: Mapping[str, Any],
                        known: Mapping[int, Any] | None = None) -> dict[str, list[np.ndarray]]:
    """Per integer or bool output named: the values it takes, as eager NumPy computes
    it, when one float value on its path that libraries round differently (a
    transcendental's, an order-free reduction's) moves by its tolerance (ULPS_APART
    units in the last place; a reduction's slack) up or down. A truncating cast or a
    comparison of a value an ulp from an integer or from the other operand turns that ulp
    into a whole unit:
    `(255 * (img / 255) ** 2.2 ** (1 / 2.2)).astype(np.uint8)` is 176 from NumPy's
    float32 power on AVX-512 and 177 from libm's (and CUDA's)."""
    known, wanted, moving = _moving_for(graph, names, known)
    rt = node_rtols(graph)
    alternatives: dict[str, list[np.ndarray]] = {name: [] for name in wanted}
    if not moving:
        return alternatives
    env = _values(graph, inputs, known)
    for r in moving:
        d = _move_by(graph, env, r, rt[r])
        after = _descendants(graph, r, known)
        hits = {name: i for name, i in wanted.items() if i in after}
        if hits and np.any(d):
            for local in _shifted_runs(graph, env, r, d, after):
                for name, i in hits.items():
                    alternatives[name].append(np.asarray(local[i]))
    return alternatives


def compare_discrete(name: str, got: Any, want: Any, alternatives: Sequence[np.ndarray]) -> OutputCheck:
    """An integer or bool output: each element equal to NumPy's, or to what NumPy gives
    it when one library-rounded value on its path moves within its tolerance
    (output_alternatives)."""
    g, w = np.asarray(got), np.asarray(want)
    bad = g != w
    for alt in alternatives:
        if not bad.any():
            break
        bad &= g != np.broadcast_to(alt, g.shape)
    n = int(bad.sum())
    if n == 0:
        return OutputCheck(name, True, 0.0, f"{name}: equal, or as NumPy gives it with a library-rounded value "
                                            "on its path moved within its tolerance")
    at = np.unravel_index(int(np.argmax(bad)), g.shape)
    return OutputCheck(name, False, float(n), f"{name}: {n} of {g.size} elements differ, also from what an "
                                              f"ulp's difference on their path gives; first at "
                                              f"{tuple(int(i) for i in at)}: {g[at].item()!r} vs {w[at].item()!r}")


def compare_with_slack(name: str, got: Any, want: Any, rtol: float, slack: np.ndarray) -> OutputCheck:
    """fuselab.runtime.verify.compare_one's judgement (float outputs) with `slack` added
    to each element's tolerance: |got - want| <= rtol max|want| + rtol |want| + slack."""
    g64, w64 = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    nan_g, nan_w = np.isnan(g64), np.isnan(w64)
    finite = np.isfinite(w64)
    scale = float(np.max(np.where(finite, np.abs(w64), 0.0))) if w64.size else 0.0
    atol = rtol * max(scale, float(np.finfo(np.asarray(got).dtype).tiny))
    with np.errstate(all="ignore"):
        err = np.abs(g64 - w64) / (atol + rtol * np.abs(w64) + slack)
    err = np.where(nan_g & nan_w, 0.0, err)
    err = np.where(~finite & (g64 == w64), 0.0, err)
    err = np.where(nan_g != nan_w, np.inf, err)
    err = np.nan_to_num(err, nan=np.inf)
    worst = float(err.max()) if err.size else 0.0
    if worst <= 1.0:
        return OutputCheck(name, True, worst, f"{name}: within rtol {rtol:g} and the reduction-order slack "
                                              f"(worst {worst:.2f} of the tolerance)")
    at = np.unravel_index(int(np.argmax(err)), err.shape)
    bad = int((err > 1.0).sum())
    return OutputCheck(name, False, worst,
                       f"{name}: {bad} of {err.size} elements outside rtol {rtol:g} and the reduction-order "
                       f"slack; worst at {tuple(int(i) for i in at)}: {g64[at]!r} vs {w64[at]!r} "
                       f"(slack {float(slack[at]):.3g})")


def output_rtols(plan: Plan) -> dict[str, float]:
    """Each output's tolerance: that of the least precise float dtype it is computed from
    (a float64 result of float32 values, as Numba's typing makes them, is as close as its
    float32 steps are: transcendentals and powers differ by an ulp between libraries)."""
    g = plan.graph
    loosest = node_rtols(g)
    return {name: max(loosest[i], RTOL.get(g.nodes[i].dtype, 1e-5)) for name, i in g.outputs}


def check(plan: Plan, got: Mapping[str, Any], want: Mapping[str, Any],
          inputs: Mapping[str, Any] | None = None, known: Mapping[int, Any] | None = None) -> Check:
    """`got` against the reference `want`, each output at its output_rtols tolerance; with
    the cell's `inputs` (and `known`, the values taken at graph breaks), a float output
    outside it is judged again with the slack of the reductions and transcendentals it
    follows from, and an integer or bool output that differs against what NumPy gives
    with a library-rounded value on its path moved within its tolerance (tolerance.py)."""
    rtols = output_rtols(plan)
    checks = [compare_one(name, got[name], want[name], rtols.get(name)) for name in want]
    again = [k for k, c in enumerate(checks) if not c.ok and inputs is not None
             and np.asarray(got[c.name]).dtype.kind == "f" and np.shape(got[c.name]) == np.shape(want[c.name])
             and np.asarray(got[c.name]).dtype == np.asarray(want[c.name]).dtype]
    if again:
        names = [checks[k].name for k in again]
        slack = output_slacks(plan.graph, names, inputs, known)
        for k in again:
            name = checks[k].name
            if np.any(slack[name]):
                checks[k] = compare_with_slack(name, got[name], want[name], rtols[name], slack[name])
    discrete = [k for k, c in enumerate(checks) if not c.ok and inputs is not None
                and np.asarray(got[c.name]).dtype.kind in "biu"
                and np.shape(got[c.name]) == np.shape(want[c.name])
                and np.asarray(got[c.name]).dtype == np.asarray(want[c.name]).dtype]
    if discrete:
        alternatives = output_alternatives(plan.graph, [checks[k].name for k in discrete], inputs, known)
        for k in discrete:
            name = checks[k].name
            if alternatives[name]:
                checks[k] = compare_discrete(name, got[name], want[name], alternatives[name])
    checks = tuple(checks)
    bad = [c for c in checks if not c.ok]
    return Check(not bad, max(bad, key=lambda c: c.max_error).message if bad else "",
                 tuple(c.message for c in checks), checks)
