"""Legality: can these units be one kernel, and under which template?

Every refusal carries a reason a person can read; the explorer shows it verbatim.

THE TEMPLATE CONTRACT (fuselab.codegen implements exactly these; this module must only
accept kernels of these forms). "Free" nodes (constants, full/arange, views) follow
kernels.make_kernel: they are duplicated into every kernel that reads them.

- POINTWISE: every non-free node is ELEMWISE (or the kernel is one free node that is a
  cell result: a copy). All STORED outputs have the same shape S, the iteration space;
  intermediate nodes may have smaller broadcastable shapes. Views (transpose, slice,
  reshape, broadcast_to) may appear anywhere: pure index math, producers recomputed at the
  remapped indices.
- REDUCTION: one or more reduce nodes (sum/prod/max/min/any/all/argmax/argmin) that all
  reduce an input of the same shape I over the same axes to the same shape R (siblings:
  (x*y).sum() and (x*x).sum() are one kernel with two outputs); a prologue of ELEMWISE and
  free nodes computed at input-space indices (a stored prologue node has shape I); an
  epilogue of ELEMWISE nodes over R that read only reduce results, other epilogue nodes,
  constants or loads of kernel inputs broadcastable to R (a stored epilogue node has shape
  R). mean = sum * (1/n) and norm = sqrt(sum(x*x)) are one kernel. Any axes: full, column,
  middle axis. No reduction may depend on another reduction of the same kernel.
- ROW: one full shape F (ndim >= 1) and one axis k of it that every reduce node reduces
  (its input has exactly shape F, axes == (k,), keepdims or not): rows are the positions
  of the other axes, a row's columns run along k (analysis.row_shapes; contiguous when k
  is the last axis or every later axis has length 1, strided otherwise). Every other node
  is ELEMWISE over a shape that broadcasts to F, or "per-row": F with a 1 at k
  (keepdims) or F without k. Reduced values may be broadcast back
  (x - x.max(-1, keepdims=True), x - x.mean(0)) and reductions may depend on earlier ones
  (softmax: max then sum; layernorm: mean, var, normalise). A per-row value without
  keepdims is only combined with other such values, never broadcast against F (NumPy
  would align it with the columns), unless k == 0, where NumPy's alignment is the rows'.
  Rows along a strided axis number at least Budgets.min_strided_rows (a thread each) or
  form big enough slabs of adjacent rows (a block each; analysis.strided_layout) when
  planning (a budget: fewer leave the GPU idle; the template itself runs any number).
  Views inside a ROW kernel only on loads of kernel inputs, or a reshape that adds/removes
  the unit axis k of a per-row value. Stored outputs: full-shape (F) or per-row nodes. A
  row kernel needs at least two rows: with one row, a reduction broadcast back is the
  grid-wide dependence of a full reduction (x / x.sum()), which no single kernel can do.
- OPAQUE: exactly one opaque node, alone.

Every template: the computed nodes come from one stage of the trace. A graph break (Python
needed a value) runs everything traced before it, and the device finishes, before the cell
goes on, so no kernel holds nodes from both sides of one.

Budgets bound the size of a kernel: compute nodes, array parameters, and a register
estimate (values live at once in the kernel's expression DAG).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ops import Kind
from .analysis import (MIN_STRIDED_ROWS, SLAB_BLOCKS_PER_ROW, SLAB_MIN_ELEMS, Analysis, bits, broadcasts_to,
                       row_axis, row_problem_ok, row_shapes, shape_text)
from .model import Space, Template, break_between


@dataclass(frozen=True)
class Budgets:
    """Limits on one kernel. Defaults keep generated kernels quick to compile and free of
    register spills, and row kernels along a strided axis busy; they rarely bind on
    notebook cells."""

    max_nodes: int = 128          # compute nodes in one kernel
    max_params: int = 64          # arrays read + arrays written
    max_registers: int = 255      # estimate: 32 + 2 per value live at once (sm_90 cap: 255)
    min_strided_rows: int = MIN_STRIDED_ROWS   # rows of a row kernel along a strided axis


DEFAULT_BUDGETS = Budgets()
UNLIMITED = Budgets(10**9, 10**9, 10**9, 2)    # the template contract alone


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""
    space: Space | None = None
    # the refusal is a reduced value needed again in the input space (grid-wide)
    dependence: bool = False

    def __bool__(self) -> bool:
        return self.ok


def _fail(reason: str, dependence: bool = False) -> Verdict:
    return Verdict(False, reason, None, dependence)


def axes_text(an: Analysis, r: int) -> str:
    """`all of [1024]`, `axis 0 of [64,128]`: what a reduction reduces."""
    nd = an.graph.nodes[r]
    axes = nd.args["axes"]
    shape = an.shape(nd.inputs[0])
    if len(axes) == len(shape):
        return f"all of {shape_text(shape)}"
    return ("axis " if len(axes) == 1 else "axes ") + ",".join(map(str, axes)) + f" of {shape_text(shape)}"


def check(an: Analysis, mask: int, budgets: Budgets = DEFAULT_BUDGETS,
          stored: int | None = None, template: Template | None = None) -> Verdict:
    """Is a kernel computing exactly the units in `mask` (storing `stored`, by default the
    members read outside it or kept by the user) legal, and over which space? With a
    `template`, only under that one (a kernel built by hand for a given template)."""
    if not mask:
        return _fail("an empty kernel")
    g = an.graph
    members = list(bits(mask))
    if an.has_breaks:
        across = stage_conflict(an, mask)
        if across:
            return _fail(across)
    alone = mask & an.alone_mask
    if alone:
        a = next(bits(alone))
        if len(members) > 1:
            other = next(v for v in members if v != a)
            return _fail(alone_reason(an, a, other))
        if g.nodes[a].kind is Kind.OPAQUE:
            space = Space(Template.OPAQUE, an.shape(a))
        else:
            space = Space(Template.POINTWISE, an.shape(a), full=mask)
        return _only(Verdict(True, space=space), template)
    if stored is None:
        stored = an.stored_of(mask, members)
    over = _budget(an, mask, members, stored, budgets)
    if over:
        return _fail(over)
    reduces = mask & an.reduce_mask
    if not reduces:
        return _only(_pointwise(an, mask, stored), template)
    if template is Template.ROW:
        return _row(an, mask, members, stored, reduces, budgets)
    if template is Template.REDUCTION:
        return _reduction(an, mask, stored, reduces)
    if template is not None:
        return _fail(f"{an.ref(next(bits(reduces)))} reduces: a {template.value} kernel has no reductions")
    red = _reduction(an, mask, stored, reduces)
    if red.ok:
        return red
    row = _row(an, mask, members, stored, reduces, budgets)
    if row.ok:
        return row
    if red.dependence:
        return _fail(f"{red.reason}; a row kernel cannot help: {row.reason}", True)
    return red


def _only(verdict: Verdict, template: Template | None) -> Verdict:
    """The verdict, unless it is for another template than the one asked for."""
    if template is None or not verdict.ok or verdict.space.template is template:
        return verdict
    return _fail(f"a {verdict.space.template.value} kernel, not a {template.value} one")


def stage_conflict(an: Analysis, mask: int) -> str:
    """Why units of `mask` cannot share a kernel across a graph break, or "". Stages
    ascend with node ids, so the lowest and highest member tell."""
    early, late = (mask & -mask).bit_length() - 1, mask.bit_length() - 1
    if an.stage[early] == an.stage[late]:
        return ""
    b = break_between(an.graph, early, late)
    where = f"the graph break at line {b.loc.line}" if b.loc is not None else "a graph break"
    return (f"{an.ref(late)} was traced after {where} ({b.reason}), and {an.ref(early)} before "
            "it: the GPU must finish everything before a break before the cell goes on")


def alone_reason(an: Analysis, a: int, other: int) -> str:
    if an.graph.nodes[a].kind is Kind.OPAQUE:
        return (f"{an.ref(a)} is opaque: it runs alone through the array library, "
                f"so it cannot share a kernel with {an.ref(other)}")
    return (f"{an.ref(a)} is a view kept as a cell result: a copy kernel of its own stores it, "
            f"so it cannot share a kernel with {an.ref(other)}")


def _budget(an: Analysis, mask: int, members: list[int], stored: int, b: Budgets) -> str:
    if len(members) > b.max_nodes:
        return (f"the kernel would compute {len(members)} ops, over the budget of {b.max_nodes} "
                "(long kernels compile slowly and spill registers)")
    params = an.reads_of(mask, members).bit_count() + stored.bit_count()
    if params > b.max_params:
        return f"the kernel would take {params} arrays as parameters, over the budget of {b.max_params}"
    if 32 + 2 * len(members) <= b.max_registers:
        return ""  # even with every value live at once
    regs = register_estimate(an, mask, members)
    if regs > b.max_registers:
        return (f"the kernel would need about {regs} registers per thread "
                f"(budget {b.max_registers}): too many values live at once")
    return ""


def register_estimate(an: Analysis, mask: int, members: list[int]) -> int:
    """32 for indices and addresses, plus 2 per value live at once when the members are
    evaluated in order (a value stays live until its last in-kernel reader)."""
    last = {v: max(bits(an.umask[v] & mask), default=v) for v in members}
    live = peak = 0
    ending: dict[int, int] = {}
    for v in members:
        live -= ending.pop(v, 0)
        if last[v] > v:
            live += 1
            ending[last[v]] = ending.get(last[v], 0) + 1
        peak = max(peak, live)
    return 32 + 2 * peak


def _aval(an: Analysis, i: int) -> str:
    return an.aval_text[i]


def _pointwise(an: Analysis, mask: int, stored: int) -> Verdict:
    shapes: dict[tuple[int, ...], int] = {}
    for v in bits(stored):
        shapes.setdefault(an.shape(v), v)
    if len(shapes) > 1:
        (_, a), (_, b) = list(shapes.items())[:2]
        return _fail(f"{an.ref(a)} {_aval(an, a)} and {an.ref(b)} {_aval(an, b)} would both be "
                     "stored, but a pointwise kernel has one iteration space")
    space = next(iter(shapes), an.shape(max(bits(mask))))
    return Verdict(True, space=Space(Template.POINTWISE, space, full=mask))


def _reduction(an: Analysis, mask: int, stored: int, reduces: int) -> Verdict:
    rs = list(bits(reduces))
    r0 = rs[0]
    sig0 = an.reduce_sigs[r0]
    for r in rs[1:]:
        sig = an.reduce_sigs[r]
        if sig != sig0:
            if sig[:2] == sig0[:2]:
                what = f"results of shape {shape_text(sig0.result)} and {shape_text(sig.result)} (keepdims differs)"
            else:
                what = "inputs of one shape over the same axes"
            return _fail(f"{an.ref(r0)} reduces {axes_text(an, r0)} but {an.ref(r)} reduces "
                         f"{axes_text(an, r)}: a reduction kernel needs {what}")
    for r in rs:
        dep = an.anc[r] & reduces
        if dep:
            r1 = next(bits(dep))
            return _fail(f"{an.ref(r)} reduces a value computed from {an.ref(r1)}, another "
                         "reduction of the same kernel: a reduction kernel finishes its "
                         "reductions together, not one after another", True)
    I, R = sig0.input, sig0.result
    pro = 0
    for r in rs:
        pro |= an.anc[r]
    pro &= mask & ~reduces
    epi = mask & ~pro & ~reduces
    for v in bits(pro & stored):
        if an.shape(v) != I:
            return _fail(f"{an.ref(v)} {_aval(an, v)} would be stored by the reduction's input "
                         f"loop, which runs over {shape_text(I)}")
    for e in bits(epi):
        if not broadcasts_to(an.shape(e), R):
            dep = an.anc[e] & reduces
            if dep:
                r = next(bits(dep))
                full = len(an.graph.nodes[r].args["axes"]) == len(I)
                what = ("a full reduction's result is needed by every element"
                        if full else "a reduction's result is needed back at every element")
                return _fail(f"{an.ref(e)} needs {an.ref(r)} (a reduction over {axes_text(an, r)}) "
                             f"at each of its {an.size[e]} elements: {what}, a grid-wide "
                             "dependence (one kernel cannot wait for all of its blocks to finish "
                             "the reduction)", True)
            if broadcasts_to(an.shape(e), I):
                return _fail(f"{an.ref(e)} {_aval(an, e)} does not feed a reduction of the kernel, "
                             f"and a reduction kernel's loop over {shape_text(I)} computes only "
                             f"what it reduces (its epilogue runs over the result {shape_text(R)})")
            return _fail(f"{an.ref(e)} {_aval(an, e)} runs neither over the reduction's input "
                         f"{shape_text(I)} nor over its result {shape_text(R)}")
        if stored >> e & 1 and an.shape(e) != R:
            return _fail(f"{an.ref(e)} {_aval(an, e)} would be stored, but the reduction's "
                         f"results have shape {shape_text(R)}")
        for u, chain in an.prods[e]:
            if not mask >> u & 1:
                continue
            if pro >> u & 1:
                return _fail(f"{an.ref(e)} runs after the reduction but reads {an.ref(u)}, "
                             "which the kernel computes per input element before reducing")
            if chain:
                return _fail(f"{an.ref(e)} reads {an.ref(u)} through the view {an.ref(chain[-1])}: "
                             "a reduction's epilogue reads its results directly")
    # a stored value that needs no reduction and has the input's shape is computed in the
    # input loop, with the prologue (only possible when I == R: every reduced axis has length 1)
    loose = 0
    for e in bits(epi & stored):
        if not an.anc[e] & reduces and an.shape(e) == I:
            loose |= 1 << e
    return Verdict(True, space=Space(Template.REDUCTION, I, R, full=pro | reduces | loose, axes=sig0.axes,
                                     reduces=tuple(rs)))


def _row(an: Analysis, mask: int, members: list[int], stored: int, reduces: int, budgets: Budgets) -> Verdict:
    g = an.graph
    rs = list(bits(reduces))
    r0 = rs[0]
    F = an.shape(g.nodes[r0].inputs[0])
    k = row_axis(g, r0)
    for r in rs:
        Fr = an.shape(g.nodes[r].inputs[0])
        if row_axis(g, r) is None:
            return _fail(f"{an.ref(r)} reduces over {axes_text(an, r)}, but a row kernel "
                         "iterates rows and reduces one axis")
        if (Fr, row_axis(g, r)) != (F, k):
            return _fail(f"{an.ref(r0)} reduces {axes_text(an, r0)} but {an.ref(r)} reduces "
                         f"{axes_text(an, r)}: a row kernel has one row shape and one reduced axis")
    rs_shape = row_shapes(F, k)
    rows = rs_shape.rows
    if rows < 2:
        return _fail(f"{an.ref(r0)} reduces {shape_text(F)} as one single row, and a row "
                     "kernel needs at least two rows")
    if not row_problem_ok(rs_shape, budgets.min_strided_rows):
        return _fail(f"{an.ref(r0)} reduces {axes_text(an, r0)}: {rows} rows whose columns lie "
                     f"{rs_shape.stride} elements apart. A row kernel along a strided axis needs at "
                     f"least {budgets.min_strided_rows} rows (a thread each), or slabs of adjacent rows "
                     f"of at least {SLAB_MIN_ELEMS} elements in at least "
                     f"{budgets.min_strided_rows // SLAB_BLOCKS_PER_ROW} blocks, to keep the GPU busy")
    P_keep, P_flat = rs_shape.keep, rs_shape.per_row
    align: dict[int, str] = {}   # "A": broadcast against F; "B": per-row without keepdims
    # members computed from the kernel's reductions alone: with rows of one column an
    # element and a per-row value have the same shape, and only these are per-row for sure
    from_reductions: set[int] = set()

    def one_like(shape: tuple[int, ...]) -> bool:
        return all(s == 1 for s in shape)

    for v in members:
        reads: list[tuple[int, str, tuple[int, ...]]] = []
        for u, chain in an.prods[v]:
            if not mask >> u & 1:
                continue
            if not chain:
                reads.append((u, align[u], an.shape(u)))
                continue
            f = chain[-1]
            if len(chain) == 1 and g.nodes[f].op == "reshape":
                if align[u] == "B" and an.shape(f) == P_keep:
                    reads.append((u, "A", P_keep))
                    continue
                if align[u] == "A" and an.shape(u) == P_keep and an.shape(f) == P_flat:
                    if F[k] == 1 and u not in from_reductions:
                        # the kernel would compute an element's value once per row, reading
                        # no element (np.isinf(np.sqrt(x).squeeze()) beside x.any(axis=1))
                        return _fail(f"{an.ref(v)} reads {an.ref(u)}, an element of rows of one column, "
                                     f"as a per-row value through {an.ref(f)}: a row kernel computes "
                                     "per-row values from its reductions only")
                    reads.append((u, "A" if k == 0 else "B", P_flat))
                    continue
            return _fail(f"{an.ref(v)} reads {an.ref(u)} through the view {an.ref(f)}: a row "
                         "kernel views only the arrays it loads, or adds/removes the trailing "
                         "unit axis of a per-row value")
        if reduces >> v & 1:
            # without keepdims, the result of reducing axis 0 still lines up with the rows
            # when broadcast (x - x.mean(0)); along a later axis it lines up with the columns
            align[v] = "A" if g.nodes[v].args["keepdims"] or k == 0 else "B"
            from_reductions.add(v)
            continue
        if all((u in from_reductions) if mask >> u & 1 else one_like(an.shape(u)) for u, _ in an.prods[v]):
            from_reductions.add(v)
        per_row = [(u, s) for u, al, s in reads if al == "B" and not one_like(s)]
        if per_row:
            u, _ = per_row[0]
            if an.shape(v) != P_flat:
                return _fail(f"{an.ref(v)} {_aval(an, v)} broadcasts {an.ref(u)}, a per-row value "
                             f"of shape {shape_text(P_flat)} (no keepdims), along its last axes: "
                             "NumPy aligns it with the columns, not the rows")
            others = [w for w, al, s in reads if al == "A" and not one_like(s)]
            if others:
                return _fail(f"{an.ref(v)} combines {an.ref(u)}, a per-row value without keepdims, "
                             f"with {an.ref(others[0])}: their axes do not line up")
            align[v] = "B"
        else:
            if not broadcasts_to(an.shape(v), F):
                return _fail(f"{an.ref(v)} {_aval(an, v)} does not broadcast to the rows "
                             f"{shape_text(F)}")
            align[v] = "A"
    for v in bits(stored):
        ok = an.shape(v) in (F, P_keep) + ((P_flat,) if k == 0 else ()) if align[v] == "A" \
            else an.shape(v) == P_flat
        if not ok:
            return _fail(f"{an.ref(v)} {_aval(an, v)} would be stored, but a row kernel stores "
                         f"whole rows {shape_text(F)} or one value per row")
    full = reduces
    for v in members:
        s = an.shape(v)
        along = len(s) > len(F) - 1 - k and s[len(s) - len(F) + k] == F[k]   # varies along the row
        if align[v] == "A" and along and F[k] != 1:
            full |= 1 << v
    level: dict[int, int] = {}
    for r in rs:
        level[r] = 1 + max((level[q] for q in bits(an.anc[r] & reduces)), default=0)
    after = any(an.anc[v] & reduces for v in bits(full & ~reduces))
    passes = max(level.values()) + (1 if after else 0)
    return Verdict(True, space=Space(Template.ROW, F, P_flat, rows, passes, full, axes=(k,),
                                     reduces=tuple(rs), levels=tuple(level[r] for r in rs)))
