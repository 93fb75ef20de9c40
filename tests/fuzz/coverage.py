"""The coverage matrix of the differential fuzzer, measured on the code that ran.

Cells:
* ("reduce", layout, op, dtype): a reduction `op` over `dtype` elements in a kernel of
  `layout` — the reduction template's strategies (one thread, a few lanes, a block, split
  blocks, column, split column) and the row template's tiers, each scalar or vectorised;
* ("elem", class, op, loop dtype): an elementwise op in a pointwise kernel (vector or
  strided path), a reduction kernel, or a row kernel;
* ("cast", class, from, to): an astype in such a kernel.
Features count the situations the issue names (sibling reductions of different
accumulators, keepdims broadcast back, axes positions, sizes 0 and 1, negative-step and
strided views, transposed views, integer division and shifts with negatives, NaN through
max/argmax, float16 edges, plans under random user constraints, graph breaks...).

A cell is reachable when NumPy has that loop; every reduction op meets every layout.
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from fuselab.codegen import KernelCode
from fuselab.ir import Graph
from fuselab.ops import OPS, Kind, ShapeError, ufunc_loop_dtypes
from fuselab.plan.model import Plan, Template

from .data import DTYPES

REDUCE_LAYOUTS = tuple(f"{base}{vec}" for base in (
    "reduction/thread", "reduction/lanes", "reduction/block", "reduction/split", "reduction/column",
    "reduction/column-split", "row/warp", "row/block", "row/smem", "row/looped") for vec in ("", "+vec")) + (
    "row/strided",)   # rows along a strided axis, a thread each: no vectors
CLASSES = ("pointwise-vector", "pointwise-strided", "reduction", "row")
REDUCE_OPS = ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "var")

Cell = tuple[str, str, str, str]


def layout_of(code: KernelCode) -> str:
    """The strategy a generated kernel uses, from the notes codegen writes for the explorer."""
    note = code.notes[0] if code.notes else ""
    if code.template is Template.POINTWISE:
        return "pointwise/vector" if note.startswith("vector") else "pointwise/strided"
    if code.template is Template.ROW:
        if "rows along axis" in note:
            return "row/strided"
        tier = ("warp" if note.startswith("warp") else "looped" if note.startswith("looped") else
                "smem" if "per row" in note and "shared memory" in note else "block")
        packed = any(n.startswith("packs of") and not n.startswith("packs of 1 ") for n in code.notes)
        return f"row/{tier}" + ("+vec" if packed else "")
    vec = "vectors" in note
    if note.startswith("column"):
        tile = int(note.split()[1])
        return ("reduction/column-split" if "blocks along" in note else "reduction/column") + \
            ("+vec" if tile > 32 else "")
    if "blocks per output" in note:
        base = "reduction/split"
    elif "one block per output" in note:
        base = "reduction/block"
    elif "one thread per output" in note:
        base = "reduction/thread"
    else:
        base = "reduction/lanes"
    return base + ("+vec" if vec else "")


def kernel_class(layout: str) -> str:
    if layout.startswith("pointwise/"):
        return "pointwise-" + layout.split("/")[1]
    return layout.split("/")[0]


def cells_of(graph: Graph, kernel_nodes: Iterable[int], code: KernelCode) -> list[Cell]:
    layout = layout_of(code)
    cls = kernel_class(layout)
    out: list[Cell] = []
    for i in kernel_nodes:
        n = graph.nodes[i]
        if n.kind is Kind.REDUCE:
            out.append(("reduce", layout, n.op, graph.nodes[n.inputs[0]].dtype.name))
        elif n.op == "astype":
            out.append(("cast", cls, graph.nodes[n.inputs[0]].dtype.name, n.dtype.name))
        elif n.kind is Kind.ELEMWISE and n.op != "where":
            dts = {d.name for d in n.operand_dtypes}
            out.append(("elem", cls, n.op, "/".join(sorted(dts))))
        elif n.op == "where":
            out.append(("elem", cls, "where", n.dtype.name))
    return out


def _elem_loops() -> dict[str, set[str]]:
    loops: dict[str, set[str]] = {}
    for name, op in OPS.items():
        if op.kind is not Kind.ELEMWISE or name in ("astype",):
            continue
        if name == "where":
            loops[name] = {d.name for d in DTYPES}
            continue
        for d in DTYPES:
            try:
                got = ufunc_loop_dtypes(op.xp_name, [d] * op.arity)
            except ShapeError:
                continue
            loops.setdefault(name, set()).add("/".join(sorted({g.name for g in got[:-1]})))
    return loops


def reachable() -> set[Cell]:
    cells: set[Cell] = set()
    for layout, op, d in itertools.product(REDUCE_LAYOUTS, REDUCE_OPS, DTYPES):
        if op == "var" and d == np.float16:
            continue   # float16 variances are NumPy's steps (sums), not one var reduction
        if op in ("any", "all") and d != np.bool_:
            continue   # np.any(x) reduces x.astype(bool): the reduction only ever sees bools
        cells.add(("reduce", layout, op, d.name))
    for name, dts in _elem_loops().items():
        for cls, d in itertools.product(CLASSES, dts):
            cells.add(("elem", cls, name, d))
    for cls, a, b in itertools.product(CLASSES, DTYPES, DTYPES):
        if a != b:
            cells.add(("cast", cls, a.name, b.name))
    return cells


@dataclass
class Coverage:
    cells: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)
    programs: int = 0
    plans: int = 0

    def add(self, cells: Iterable[Cell], features: Iterable[str]) -> None:
        self.cells.update(cells)
        self.features.update(features)

    def merge(self, other: "Coverage") -> None:
        self.cells.update(other.cells)
        self.features.update(other.features)
        self.programs += other.programs
        self.plans += other.plans

    def missing(self, universe: set[Cell] | None = None) -> list[Cell]:
        universe = universe if universe is not None else reachable()
        return sorted(c for c in universe if self.cells[c] == 0)

    # -- persistence -------------------------------------------------------------
    def to_json(self) -> dict:
        return {"programs": self.programs, "plans": self.plans,
                "cells": [[*c, n] for c, n in sorted(self.cells.items())],
                "features": dict(sorted(self.features.items()))}

    @classmethod
    def from_json(cls, data: dict) -> "Coverage":
        cov = cls(programs=data.get("programs", 0), plans=data.get("plans", 0))
        cov.cells.update({tuple(c[:4]): c[4] for c in data.get("cells", [])})
        cov.features.update(data.get("features", {}))
        return cov

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=0))

    @classmethod
    def load(cls, path: Path) -> "Coverage":
        return cls.from_json(json.loads(path.read_text())) if path.exists() else cls()

    # -- the report ------------------------------------------------------------------
    def report(self, title: str = "Fuzzer coverage") -> str:
        universe = reachable()
        hit = {c for c in universe if self.cells[c]}
        lines = [f"## {title}", "",
                 f"{self.programs} programs, {self.plans} plans run; "
                 f"{len(hit)} of {len(universe)} reachable cells hit ({100 * len(hit) / len(universe):.1f}%).", ""]
        lines += ["### Reductions: layout x op (dtypes hit of 12; total hits)", "",
                  "| layout | " + " | ".join(REDUCE_OPS) + " |", "|---|" + "---|" * len(REDUCE_OPS)]
        for layout in REDUCE_LAYOUTS:
            row = []
            for op in REDUCE_OPS:
                cs = [("reduce", layout, op, d.name) for d in DTYPES]
                row.append(f"{sum(1 for c in cs if self.cells[c])} ({sum(self.cells[c] for c in cs)})")
            lines.append(f"| {layout} | " + " | ".join(row) + " |")
        for kind, label in (("elem", "Elementwise ops (op, loop dtype)"), ("cast", "Casts (from, to)")):
            lines += ["", f"### {label}: cells hit per kernel class", "", "| class | hit | reachable | hits |",
                      "|---|---|---|---|"]
            for cls in CLASSES:
                cs = [c for c in universe if c[0] == kind and c[1] == cls]
                lines.append(f"| {cls} | {sum(1 for c in cs if self.cells[c])} | {len(cs)} | "
                             f"{sum(self.cells[c] for c in cs)} |")
        lines += ["", "### Features", "", "| feature | programs |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(self.features.items())]
        missing = self.missing(universe)
        if missing:
            lines += ["", f"### Not yet hit ({len(missing)})", "",
                      ", ".join(":".join(c[1:]) for c in missing[:400]) + (" ..." if len(missing) > 400 else "")]
        return "\n".join(lines) + "\n"


def features_of(graph: Graph, plan: Plan, codes, inputs: dict[str, np.ndarray]) -> set[str]:
    """The situations a program's plan exercised (only what the code that ran shows)."""
    out: set[str] = {f"plan: {plan.strategy}"}
    if plan.constraints.active:
        out.add("plan: random user constraints")
    if graph.breaks:
        out.add("graph break")
    vals = {graph.nodes[i].args["name"]: inputs.get(graph.nodes[i].args["name"]) for i in graph.input_ids}
    for k, (kern, code) in enumerate(zip(plan.kernels, codes)):
        if not isinstance(code, KernelCode):
            out.add("opaque kernel")
            continue
        if any(n.startswith("transpose path") for n in code.notes):
            out.add("pointwise transpose path (shared-memory tiles)")
        if any(n.startswith("stencil path") for n in code.notes):
            out.add("pointwise stencil path (a thread marches down rows)")
        if any(n.startswith("row-vector path") for n in code.notes):
            out.add("pointwise row-vector path")
        if any(n.startswith("tables:") for n in code.notes):
            out.add("pointwise gathers of broadcast operands (tables)" if kern.template.value == "pointwise"
                    else f"{kern.template.value} tables of small operands' values")
        if any(n.startswith("axes read in memory order") for n in code.notes):
            out.add("reduction laid out in memory order")
        reds = [i for i in kern.nodes if graph.nodes[i].kind is Kind.REDUCE]
        rules = {(graph.nodes[i].op, graph.nodes[i].dtype.name) for i in reds}
        if len(reds) > 1:
            out.add("sibling reductions")
            if len({r[0] for r in rules}) > 1 and len({r[1] for r in rules}) > 1:
                out.add("sibling reductions of different ops and accumulator dtypes")
        for i in reds:
            n = graph.nodes[i]
            src = graph.nodes[n.inputs[0]]
            nd, axes = len(src.shape), n.args["axes"]
            if not axes:   # axis=(): each element alone (a cast to the result's dtype)
                out.add("reduce over no axes")
                continue
            pos = ("all" if len(axes) == nd else "trailing" if axes[-1] == nd - 1 else
                   "leading" if axes[0] == 0 else "middle")
            out.add(f"reduce over {pos} axes of {nd}-D")
            if len(axes) > 1 and axes[-1] - axes[0] != len(axes) - 1:
                out.add("reduce over non-adjacent axes")
            if src.kind is Kind.INJECTIVE:
                out.add("reduction of a view")
            if n.args["keepdims"] and any(i in graph.nodes[u].inputs for u in graph.users[i] if u in kern.nodes):
                out.add("keepdims broadcast back")
            if any(src.shape[a] == 1 for a in axes):
                out.add("reduced extent 1")
            if src.dtype.kind == "f" and n.op in ("max", "min", "argmax", "argmin"):
                out.add("float max/min/argmax (NaN and inf in inputs)")
        for i in kern.nodes:
            n = graph.nodes[i]
            if n.op == "slice" and any(s < 0 for s in n.args["step"]):
                out.add("negative-step view")
            if n.op == "slice" and any(abs(s) > 1 for s in n.args["step"]):
                out.add("strided view")
            if n.op == "transpose" and graph.nodes[n.inputs[0]].kind is Kind.INJECTIVE:
                out.add("transpose of a view")
            if n.op == "reshape" and graph.nodes[n.inputs[0]].op == "slice":
                out.add("reshape of a sliced view")
            if n.op in ("floor_divide", "remainder", "right_shift", "left_shift") and n.loop_dtype.kind == "i":
                out.add(f"signed integer {n.op}")
            if n.op == "astype" and graph.nodes[n.inputs[0]].dtype.kind == "f" and n.dtype.kind in "iu":
                out.add("float to integer cast")
            if n.loop_dtype == np.float16:
                out.add("float16 arithmetic")
            if 0 in n.shape:
                out.add("size 0")
    if any(v is not None and v.ndim == 0 for v in vals.values()):
        out.add("0-d input")
    for v in vals.values():
        if v is not None and v.dtype == np.float16 and v.size and (np.abs(v.astype(np.float32)) > 60000).any():
            out.add("float16 near its overflow edge")
    return out
