"""A plan as a standalone Python file: CuPy RawModules and a `run(...)` that launches the
kernels in order. The file needs CuPy and NumPy, not fuselab.

Opaque operations (matmul, sort, ...) are written as the CuPy call they make: the
operation is replayed against a recording stand-in for the array module, which yields
the call's text (`cp.matmul(_vals[0], _vals[3])`). An operation that does not go through the
array module (a user's ElementwiseKernel) cannot be written out, and export says so.
"""
from __future__ import annotations

import keyword
import textwrap
from typing import Any

import numpy as np

from ..ir import Graph, format_node


class ExportError(ValueError):
    """The plan cannot be written as a standalone file; the message says why."""


# -- opaque calls as text -------------------------------------------------------------

class _Expr:
    """Records attribute accesses, calls and indexing as Python source text."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __getattr__(self, name: str) -> "_Expr":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Expr(f"{self._text}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> "_Expr":
        parts = [literal(a) for a in args] + [f"{k}={literal(v)}" for k, v in kwargs.items()]
        return _Expr(f"{self._text}({', '.join(parts)})")

    def __getitem__(self, key: Any) -> "_Expr":
        return _Expr(f"{self._text}[{literal(key)}]")


def literal(v: Any) -> str:
    """Python source for a static argument (raises ExportError for anything else)."""
    if isinstance(v, _Expr):
        return v._text
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if v is Ellipsis:
        return "..."
    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if isinstance(v, type) and issubclass(v, np.generic):
        return f"np.{v.__name__}"
    if isinstance(v, np.generic):
        return f"np.{type(v).__name__}({v.item()!r})"
    if isinstance(v, slice):
        return f"slice({literal(v.start)}, {literal(v.stop)}, {literal(v.step)})"
    if isinstance(v, tuple):
        inner = ", ".join(literal(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    raise ExportError(f"a static argument of type {type(v).__name__} cannot be written as Python source")


def opaque_expr(graph: Graph, i: int) -> str:
    """`cp.matmul(_vals[0], _vals[3])`: the CuPy call an opaque node makes."""
    n = graph.nodes[i]
    fn = n.args["fn"]
    kwargs = dict(n.args["kwargs"]) if "kwargs" in n.args else {}
    where = f" (line {n.loc.line}: {n.loc.text.strip()})" if n.loc is not None else ""
    try:
        out = fn.call(_Expr("cp"), *[_Expr(f"_vals[{j}]") for j in n.inputs], **kwargs)
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001 - the call did not go through the array module
        raise ExportError(f"%{i} ({fn.name}){where} does not go through the array module and cannot be "
                          f"written as a standalone CuPy call ({type(e).__name__}: {e})") from None
    # A call of the array module (`cp.sort(...)`) or an operation on the operands themselves
    # (`_vals[0][(_vals[2],)]` for a boolean mask, `_vals[1].real`, `_vals[2].nonzero()`),
    # which CuPy arrays take as NumPy's do. Anything else (a list: NumPy's own function ran
    # on the stand-ins, as fuselab runs `np.unique` at a graph break) cannot be written.
    if not isinstance(out, _Expr) or not out._text.startswith(("cp.", "_vals[")):
        raise ExportError(f"%{i} ({fn.name}){where} runs through NumPy's own function, not through the array "
                          "module, so it cannot be written as a standalone CuPy call; move that line out of "
                          "the cell to export the rest")
    text = out._text
    if "index" in n.args:
        text += f"[{n.args['index']}]"
    return f"cp.asarray({text}).astype({literal(n.dtype)}, copy=False)"


# -- the file ------------------------------------------------------------------------

# names run() uses besides its parameters
_RESERVED = frozenset({"cp", "np", "INPUTS", "run", "_vals", "_input", "_kernel", "_FUNCTIONS", "_result"})


def _source_literal(src: str) -> str:
    if "'''" not in src and not src.endswith("\\"):
        return "r'''" + src + "'''"
    return repr(src)


def break_lines(g: Graph, reasons: bool = True) -> list[str]:
    """Each graph break of the cell in a line: where, and (`reasons`) what Python read."""
    return [f"line {b.loc.line}: {b.loc.text.strip()}" + (f" ({b.reason})" if reasons else "")
            if b.loc is not None else b.reason for b in g.breaks]


def export_python(session: Any, allow_breaks: bool = False) -> str:
    """The current plan of `session` as the text of a standalone Python module.

    Refused (ExportError, saying why) where the file could not do what the cell does: a
    cell with no kernels, a kernel or library call that cannot be written, and, unless
    `allow_breaks`, a cell with graph breaks, whose values Python read are compiled into
    the kernels (`s = float(x.sum())` makes `x / s` divide by the traced sum)."""
    plan, g = session.plan, session.graph
    if not plan.kernels:
        # (was: a module whose run() returned {} — a file that silently does nothing)
        raise ExportError("the cell computes no array on the device (its results are your arrays, views or "
                          "copies of them, or values Python computed at graph breaks): there is no kernel to export")
    breaks = break_lines(g)
    if breaks and not allow_breaks:
        # Python's decisions and the values it read at a break are baked into the trace:
        # a file run on other inputs would silently follow the traced data's path.
        where = "; ".join(break_lines(g, reasons=False))
        raise ExportError(f"the cell has graph breaks ({where}): Python read values of the traced data there and "
                          "went on with them, so those values and the branches taken are compiled into the "
                          "kernels and the file would give wrong results for other inputs. To export, compute "
                          "such values before the cell (np.where for a branch); "
                          "export_python(session, allow_breaks=True) writes it anyway, for these inputs only")
    codes = session.codes()
    names = list(g.input_names())
    for n in names:
        if not n.isidentifier() or keyword.iskeyword(n):
            raise ExportError(f"input {n!r} is not a valid Python parameter name")
        if n in _RESERVED:
            raise ExportError(f"input {n!r} would hide the module's own {n!r} inside run(); "
                              "rename the array in the cell")
    consts, calls = [], []
    for k, (kern, code) in enumerate(zip(plan.kernels, codes)):
        reads = ", ".join(f"%{i}" for i in kern.inputs) or "-"
        writes = ", ".join(f"%{i}" for i in kern.outputs) or "-"
        calls.append(f"    # k{k} {kern.name} ({kern.template.value}): reads {reads}, writes {writes}")
        if getattr(code, "reason", ""):   # a fused kernel the CUDA templates cannot compile
            raise ExportError(f"kernel k{k} runs through CuPy node by node ({code.reason}); the export writes "
                              "generated kernels and library calls only: run the cell with %%fuse instead")
        if getattr(code, "source", None) is None:  # an opaque library call
            for i in kern.outputs:
                calls.append(f"    _vals[{i}] = {opaque_expr(g, i)}  # {format_node(g, i)}")
                # the kernels after it are compiled for the shape it had when traced (a boolean
                # mask's length depends on the data): other inputs must not run them out of bounds
                a = g.nodes[i].aval
                calls.append(f"    _result({i}, {g.nodes[i].label!r}, _vals[{i}], {tuple(a.shape)!r})")
            continue
        consts.append(f"_SOURCE_{k} = {_source_literal(code.source)}\n")
        args = []
        for p in code.params:
            if p.role == "scratch":  # zeroed working memory of the kernel
                local = f"_scratch{k}_{p.name}"
                calls.append(f"    {local} = cp.zeros({p.nbytes}, dtype=cp.uint8)")
                args.append(local)
            elif p.role == "output":
                a = g.nodes[p.node].aval
                calls.append(f"    _vals[{p.node}] = cp.empty({tuple(a.shape)!r}, dtype={literal(a.dtype)})")
                args.append(f"_vals[{p.node}]")
            else:
                args.append(f"_vals[{p.node}]")
        if code.empty:
            calls.append("    # nothing to compute (an empty array): no launch")
        else:
            calls.append(f"    _kernel({k}, _SOURCE_{k}, {code.name!r}, {tuple(code.nvrtc_options)!r})(\n"
                         f"        {tuple(code.grid)!r}, {tuple(code.block)!r}, ({', '.join(args)},),"
                         f" shared_mem={code.shared_mem})")
    inputs = {g.nodes[i].args["name"]: (g.nodes[i].aval, i) for i in g.input_ids}
    spec = ",\n".join(f"    {n!r}: ({tuple(a.shape)!r}, {a.dtype.name!r})" for n, (a, _) in inputs.items())
    outs = ", ".join(f"{name!r}: _vals[{i}]" for name, i in g.outputs)
    cell = textwrap.indent(g.source.strip() or "(source not recorded)", "    ")
    caveat = ("" if not breaks else "\nWARNING: written for the traced inputs only. The cell had graph breaks, where "
              "Python read values\nof the traced data; those values and the branches taken are compiled into "
              "the kernels:\n" + "".join(f"    {b}\n" for b in breaks))
    load = "\n".join(f"    _vals[{i}] = _input({n!r}, {n})" for n, (_, i) in inputs.items())
    return f'''"""A fuselab plan exported as a standalone module: {len(plan.kernels)} kernel(s) for the cell

{cell}

Needs CuPy and NumPy only. Shapes, dtypes and strides are compiled into the kernels, so
the inputs must have exactly these shapes and dtypes (they are made C-contiguous):

    import cupy as cp, fuselab_plan
    outputs = fuselab_plan.run({", ".join(f"{n}=..." for n in names)})   # {{name: cupy array}}

`python fuselab_plan.py` runs it once on random inputs.
{caveat}"""
import cupy as cp
import numpy as np

INPUTS = {{
{spec}
}}

{"".join(consts)}
_FUNCTIONS = {{}}


def _kernel(k, source, name, options):
    if k not in _FUNCTIONS:
        _FUNCTIONS[k] = cp.RawModule(code=source, options=options).get_function(name)
    return _FUNCTIONS[k]


def _input(name, a):
    shape, dtype = INPUTS[name]
    zero_d = isinstance(a, np.ndarray) and a.ndim == 0
    # CuPy 14 uploads a 0-d float16 -0.0 as +0.0; one element keeps it
    a = cp.asarray(a.reshape(1)) if zero_d else cp.asarray(a)
    if zero_d:
        a = a.reshape(())
    if not a.flags.c_contiguous:  # (not ascontiguousarray: it makes 0-d arrays 1-d)
        a = a.copy()
    if a.shape != shape or a.dtype != np.dtype(dtype):
        raise ValueError(f"{{name}} must be {{dtype}}{{list(shape)}}, got {{a.dtype}}{{list(a.shape)}}")
    return a


def _result(node, op, value, shape):
    if value.shape != shape:
        raise ValueError(f"%{{node}} ({{op}}) has shape {{value.shape}} for these inputs, but the kernels after it "
                         f"were compiled for {{shape}}, its shape when the cell was traced: export the cell "
                         "again for these inputs")


def run({", ".join(names)}):
    """Launch the plan's kernels in order; returns the cell's results by name."""
    _vals = {{}}
{load}
{chr(10).join(calls)}
    return {{{outs}}}


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    args = {{n: cp.asarray(rng.random(s).astype(d) if np.dtype(d).kind == "f" else
                         rng.integers(0, 10, s).astype(d)) for n, (s, d) in INPUTS.items()}}
    for name, value in run(**args).items():
        print(name, value.dtype, value.shape)
'''
