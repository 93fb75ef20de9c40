"""The bottom of tracing: the tracer array, the tracing context, graph breaks.

A `Tracer` stands for one array object of the plain run: every operation records a node,
and the tracer object itself plays the role of the array object NumPy would have made
(so `z = y` is the same array, `y.copy()` a new one, `x.T` a view of `x`). Python control
flow runs as usual; when Python needs a value (`if`, `print`, `float()`, iteration of a
long array...), that is a graph break: the value is computed exactly as NumPy would,
Python gets it, and tracing goes on.

This module knows nothing about NumPy's API: operators, methods and `__array_ufunc__` are
attached to `Tracer` by the NumPy layer above (`numpy_api`), as JAX's NumPy layer does.
The tracing state lives in a ContextVar, so nested or concurrent traces cannot mix.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import linecache
import math
import operator
import sys
import weakref
from types import FrameType
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from ..dask.xp import is_dask_array
from ..errors import TraceError
from ..interp import PythonWarning
from ..ir import GraphBuilder, SourceLoc
from ..ops import OPS, SUPPORTED_DTYPES, Aval, Kind
from .concrete import Evaluator
from .numpy_sites import REDUCING, numpy_reduce_line, numpy_site, numpy_step_line, numpy_wrapped_line
from .active import CURRENT, active  # noqa: F401  (active: re-exported)
from .warn import CellWarnings, Origin, Position, Site, fp_label, overflow_warns

_CTX = CURRENT   # (active.py: the warnings' hooks ask for it without importing this module)

# Arrays of these dtypes are traced; others (object, structured, strings, dates) and
# ndarray subclasses (np.matrix, masked arrays) stay real objects and run as plain Python.
TRACED_DTYPES = SUPPORTED_DTYPES | {np.dtype(np.complex64), np.dtype(np.complex128)}

# Iterating over a traced array with at most this many rows unrolls into one node per
# row (no graph break), like a Python loop over range(); longer arrays are iterated by
# value at a graph break.
SYMBOLIC_ITERATION_MAX = 32
# A CuPy array's items are views, 0-d ones too (a write through the array shows in the
# item the loop holds, and a write into the item in the array): unrolled further, so that
# the loop's items are the array's, not views of the value at a break
SYMBOLIC_ITERATION_MAX_CUPY = 1024


class Refused(BaseException):
    """fuselab cannot trace this. A BaseException, so that a cell's own
    `try/except Exception` cannot mistake it for the user's error and take another
    branch than plain Python would; the cell runner shows `error`."""

    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error


def is_cupy_array(x: Any) -> bool:
    t = type(x)
    return t.__module__.startswith("cupy") and hasattr(t, "__cuda_array_interface__")


def is_array(x: Any) -> bool:
    """A concrete NumPy or CuPy array (subclasses included) or a Dask array, never a tracer."""
    return not isinstance(x, Tracer) and (isinstance(x, np.ndarray) or is_cupy_array(x) or is_dask_array(x))


def native(dtype: np.dtype) -> np.dtype:
    """The same dtype in the machine's byte order (what NumPy computes in)."""
    return dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype


def traceable(x: Any) -> bool:
    """An array fuselab records operations on: a plain ndarray / cupy.ndarray (no
    subclass) of a numeric dtype, in either byte order."""
    if type(x) is np.ndarray:
        return native(x.dtype) in TRACED_DTYPES
    if is_dask_array(x):  # traced from its shape and dtype; unknown chunk sizes run as plain Dask
        return all(d == d for d in x.shape) and native(np.dtype(x.dtype)) in TRACED_DTYPES
    return is_cupy_array(x) and x.dtype in TRACED_DTYPES


def current() -> "TraceContext":
    ctx = _CTX.get()
    if ctx is None:
        raise RuntimeError("no %%fuse trace is active")
    return ctx


# nodes of at most this many elements are computed at a graph break if their inputs are
# (TraceContext._compute_small): cheap, and their warnings keep their place
_SMALL_RESULT = 4096


class TraceContext:
    """Everything one trace accumulates: the graph builder, the concrete inputs, the
    values computed at graph breaks, and the warnings to give."""

    def __init__(self, source: str, namespace: Mapping[str, Any], *, origin: Origin = Origin(),
                 fullgraph: bool = False, truth_uses: Mapping[tuple[int, int, int, int], str] | None = None,
                 try_lines: frozenset[int] = frozenset(), code_files: frozenset[str] = frozenset(),
                 aliases: Callable[["TraceContext"], Any]) -> None:
        """`aliases` makes the tracker of traced arrays that share memory (aliases.Aliases,
        given by the caller: it builds on this module, which only calls it)."""
        self.builder = GraphBuilder(source)
        self.origin = origin
        self.fullgraph = fullgraph
        self.lines = source.splitlines()
        self.truth_uses = dict(truth_uses or {})
        self.try_lines = try_lines
        # the files whose frames are "the user's code" (the cell; a traced function's file)
        self.code_files = code_files or frozenset({origin.filename})
        self.inputs: dict[str, Any] = {}             # input name -> the value the graph reads
        self.input_objects: dict[int, Any] = {}      # input node -> the user's array object
        self._input_by_id: dict[int, int] = {}       # id(array) -> input node
        self._tracer_by_id: dict[int, InputTracer] = {}  # id(array) -> its one tracer
        self._names_by_id = {id(v): k for k, v in namespace.items() if is_array(v)}
        self.uses_cupy = False
        # node -> (NumPy function, input dtype, whole reduction, ufunc, occurrence): a step
        # of NumPy's Python code (np.mean's division, a float16 variance's squaring), whose
        # warnings come from NumPy's line for it (numpy_sites.numpy_step_line); np.linalg.norm's
        # steps are placed per place instead (numpy_call_steps)
        self.numpy_steps: dict[int, tuple[str, str, bool, str, int]] = {}
        # nodes computed at a graph break only so that their warnings keep their place
        # (_compute_small): not values Python saw, so not break values
        self.for_warnings: set[int] = set()
        self._small_scanned = 0   # nodes below it were considered by _compute_small
        self.calling_method = False   # the handler running was called as x.name(...) (registry.call_function)
        self.calling_path: str | None = None   # and the NumPy function it stands for ("sum")
        self.uses_dask = False
        self.array_type: type = np.ndarray
        self._lazy: list[bool] = []                  # node -> its value is a Dask array
        self.tracers: list[weakref.ref] = []          # every tracer made (for the escape check)
        self.labels: dict[int, str] = {}             # node -> NumPy's word for it in a warning
        # node -> the places its value was asked for, each with its np.errstate: a node
        # shared by two lines (`i8 / 0` twice: one node) warns at each, as NumPy does
        self.sites: dict[int, list[Site]] = {}
        self.fp_errors: dict[int, list[str | PythonWarning]] = {}   # node -> errors its values gave
        # nodes NumPy computes inside its own Python code (np.mean's division, np.var's
        # steps): their warnings come from NumPy's file, whose line Python's registry shows once
        self.internal: set[int] = set()
        self._sited = 0   # nodes below this number have their own place (made: the steps of an operation)
        self._call_steps: dict[str, tuple[tuple[str, int] | None, str | None]] = {}   # numpy_call_steps
        self._seq = 0
        self.shared_asks = 0   # operations that gave an existing node (asked_again)
        self.versions: dict[int, int] = {}           # id(tracer) -> in-place updates so far
        self.warnings = CellWarnings(origin, namespace)
        self.evaluator = Evaluator(self.builder.nodes, self._input_value, self._fp_error, self.lazy)
        self.builder.on_shared = self.asked_again
        self.originals: dict[int, Any] = {}          # id(re-bound helper) -> the user's function
        # id(CuPy array adopted from a torch tensor, a Numba device array...) -> (the user's
        # object, its foreign.Kind): bound back as the user's object, results as its kind
        self.adopted: dict[int, tuple[Any, Any]] = {}
        self.aliases = aliases(self)                 # traced arrays that share memory
        # the namespace's arrays another object holds too (held.Held), or None
        self.held: Any = None
        # held.foreign_operand for this trace (set by run.py; operands.operand calls it)
        self.foreign_operand: Callable[[Any], None] | None = None

    # -- where are we in the user's code? ------------------------------------
    def user_frame(self) -> FrameType | None:
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename in self.code_files:
                return f
            f = f.f_back
        return None

    def loc(self) -> SourceLoc | None:
        f = self.user_frame()
        if f is None:
            return None
        if f.f_code.co_filename == self.origin.filename:
            line = f.f_lineno - self.origin.line_offset
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            return SourceLoc(line, text)
        return SourceLoc(f.f_lineno, linecache.getline(f.f_code.co_filename, f.f_lineno).rstrip("\n"))

    def in_try(self) -> bool:
        """Does the user's code run inside a `try` here (so an error must surface now)?"""
        f: FrameType | None = sys._getframe(1)
        while f is not None:
            if f.f_code.co_filename == self.origin.filename and \
                    f.f_lineno - self.origin.line_offset in self.try_lines:
                return True
            f = f.f_back
        return False

    def expression(self) -> tuple[str, str | None]:
        """The source text of the expression the user's code is evaluating right now,
        and the construct that asks for its truth value there ('if', 'while'...)."""
        f = self.user_frame()
        if f is None:
            return "", None
        try:
            pos = list(f.f_code.co_positions())[f.f_lasti // 2]
        except (IndexError, AttributeError):
            return "", None
        l0, l1, c0, c1 = pos
        if None in pos or f.f_code.co_filename != self.origin.filename:
            return "", None
        off = self.origin.line_offset
        key = (l0 - off, l1 - off, c0, c1)
        lines = self.lines[l0 - off - 1:l1 - off]
        if not lines:
            return "", None
        if len(lines) == 1:
            text = lines[0][c0:c1]
        else:
            text = " ".join([lines[0][c0:]] + [s.strip() for s in lines[1:-1]] + [lines[-1][:c1].strip()])
        return " ".join(text.split()), self.truth_uses.get(key)

    # -- inputs --------------------------------------------------------------
    def tracer_for(self, arr: Any, name: str | None = None) -> "InputTracer":
        """The one tracer of a concrete array object (its input node is made on first use)."""
        t = self._tracer_by_id.get(id(arr))
        if t is None:
            t = InputTracer(self, arr, name or self._names_by_id.get(id(arr)))
            self._tracer_by_id[id(arr)] = t
            self.aliases.joined(t)   # another traced array over its memory: both views of one input
        return t

    def use_cupy(self, array_type: type) -> None:
        """The cell computes with CuPy (a CuPy array in its namespace, or an array made by
        cp.zeros & co.): values at breaks are CuPy's (computed by CuPy, so 0-d CuPy arrays
        where NumPy gives scalars, CuPy's results and errors for opaque functions),
        results CuPy arrays, no NumPy scalars. Always through here, so that `uses_cupy`
        and the evaluator's module never disagree."""
        self.uses_cupy = True
        self.array_type = array_type
        self.evaluator.xp = sys.modules["cupy"]

    def input_for(self, arr: Any, name: str | None = None) -> int:
        key = id(arr)
        if key in self._input_by_id:
            return self._input_by_id[key]
        if is_cupy_array(arr):
            self.use_cupy(type(arr))
        self.uses_dask |= is_dask_array(arr)
        dt = native(np.dtype(arr.dtype))
        name = name or self._names_by_id.get(key) or f"arr{len(self.inputs)}"
        while name in self.inputs:
            name += "_"
        node = self.builder.input(name, tuple(arr.shape), dt)
        self._input_by_id[key] = node
        self.input_objects[node] = arr
        # the graph computes in native byte order; the user's object is kept for binding
        self.inputs[name] = arr if arr.dtype == dt else arr.astype(dt)
        if self.held is not None and self.held.holds(arr):   # (its contents as read are kept: held.py)
            self.held.read(arr, node)
        return node

    def _input_value(self, node: int) -> Any:
        return self.inputs[self.builder.nodes[node].args["name"]]

    def release(self) -> None:
        """The cell is bound: drop the references to the notebook's arrays. The trace's
        objects form reference cycles (tracers and their context) that only the garbage
        collector frees, and until it runs a later cell's trace would take them for other
        holders of those arrays (held.py: a graph break at each in-place update)."""
        for t in self._tracer_by_id.values():
            t._array = None
        for d in (self.inputs, self.input_objects, self._input_by_id, self._tracer_by_id, self.evaluator.values,
                  *(v for v in vars(self.aliases).values() if type(v) is dict)):   # (its memories)
            d.clear()
        self.__dict__.pop("_realrun_originals", None)
        self.held = None

    def lazy(self, node: int) -> bool:
        """Is node's value a Dask array in plain Dask code (it depends on a Dask input)?"""
        nodes = self.builder.nodes
        for i in range(len(self._lazy), node + 1):
            n = nodes[i]
            self._lazy.append(is_dask_array(self.input_objects.get(i)) if n.op == "input"
                              else any(self._lazy[j] for j in n.inputs))
        return self._lazy[node]

    # -- nodes ---------------------------------------------------------------
    def here(self) -> tuple[int, int, int]:
        """The current point of the program, ordered among the nodes: after those traced
        so far, before the next (warn.CellWarnings sorts by it)."""
        self._seq += 1
        return (len(self.builder.nodes), 0, self._seq)

    def _errstate(self) -> Mapping[str, str] | None:
        """np.errstate here, or None where it is the cell's default."""
        modes = np.geterr()
        return None if modes == self.warnings.default_modes else modes

    def _own_site(self, node: int, modes: Mapping[str, str] | None = None) -> Site:
        """The place of the line that traced `node` first."""
        return self._site((node, 1, 0), node, None, modes)

    def _site(self, position: Position, node: int, loc: SourceLoc | None,
              modes: Mapping[str, str] | None) -> Site:
        """A place of `node`'s warnings. A reduction traced by the NumPy call running now
        (np.sum(x), x.sum(), np.mean(x), x.cumsum()) warns at every call, from the line
        of NumPy's code that runs its ufunc (numpy_sites.numpy_reduce_line) or the user's;
        so do the steps of a function that runs the array's method (np.round(x, 2), from
        fromnumeric.py: numpy_sites.numpy_wrapped_line)."""
        n = self.builder.nodes[node]
        if self.calling_path in REDUCING and (OPS[n.op].kind is Kind.REDUCE or n.op == "opaque"):
            return Site(position, loc, modes, numpy_reduce_line(self.calling_path, self.calling_method),
                        per_call=True)
        line, label = self._call_steps.get(n.op, (None, None))
        if line is not None:
            return Site(position, loc, modes, line, per_call=True, label=label)
        wrapped = None if self.calling_method else numpy_wrapped_line(self.calling_path)
        if wrapped is not None:
            return Site(position, loc, modes, wrapped, per_call=True)
        return Site(position, loc, modes)

    @contextlib.contextmanager
    def numpy_call_steps(self, steps: Mapping[str, tuple[tuple[str, int] | None, str | None]]) -> Iterator[None]:
        """While a handler traces a NumPy function written in Python (np.linalg.norm), the
        nodes of op `op` it makes or shares warn from NumPy's line for that step, in its
        words: steps[op] = (file and line, label). Per place, so that a node the user's
        own line shares still warns there too."""
        outer, self._call_steps = self._call_steps, dict(steps)
        try:
            yield
        finally:
            self._call_steps = outer

    def made(self, node: int) -> None:
        """A tracer for `node` was made at the current line. The first time, this is the
        node's own place for its warnings, under the errstate here (a later line whose
        operation gives the node again gets a place of its own: asked_again); and the
        node is computed now if NumPy is set to raise here. The steps the operation traced
        on its way to `node` (np.linalg.norm's squares, x.round(2)'s product) get no tracer:
        this line is their place too, under its errstate (an overflow in one raises here
        where np.errstate(over='raise') says so)."""
        custom = self._errstate()
        for step in range(self._sited, len(self.builder.nodes)):
            if not self.sites.get(step):
                self.sites[step] = [self._own_site(step, custom)]
        self._sited = len(self.builder.nodes)
        sites = self.sites.setdefault(node, [])
        if not sites:
            sites.append(self._own_site(node, custom))
        self._raise_now(node, custom, sites[-1].position)

    def asked_again(self, node: int) -> None:
        """An operation traced at the current line gave `node` again (the builder shares
        identical nodes): a place of its own for the node's warnings."""
        self.shared_asks += 1   # (held._here: a loop's shared node is a new point of the program)
        if self.builder.nodes[node].op in ("input", "const"):
            return   # nothing to warn about; constants are shared often (no frame walk for them)
        custom = self._errstate()
        sites = self.sites.setdefault(node, [])
        loc = self.loc()
        if any(s.modes == custom and (s.loc or self.builder.nodes[node].loc) == loc for s in sites) and \
                not self.warnings.each_time(custom):
            return
        site = self._site(self.here(), node, loc, custom)
        sites.append(site)
        for kind in self.fp_errors.get(node, ()):   # computed already: its errors are known
            if self._warns_per_site(node, kind, site) or not any(
                    self.warnings.warned(s.position, kind) for s in sites[:-1]):
                self._report(node, site, kind)
        self._raise_now(node, custom, site.position)

    def name_here(self, node: int, label: str) -> None:
        """NumPy words the errors `node` gives at the current line with `label` (the two
        results of divmod: "divide by zero encountered in divmod"), whatever its other
        lines call it."""
        loc, nodes = self.loc(), self.builder.nodes
        sites = self.sites.get(node) or []
        for i in range(len(sites) - 1, -1, -1):
            if (sites[i].loc or nodes[node].loc) == loc:
                sites[i] = dataclasses.replace(sites[i], label=label)
                return

    def _raise_now(self, node: int, modes: Mapping[str, str] | None, position: Position) -> None:
        """Where NumPy is set to raise (or call a function), or the cell changed Python's
        warning filters, compute the node now: its errors raise or show here (warn.eager)."""
        if self.builder.nodes[node].op not in ("input", "const") and self.warnings.eager(modes, position):
            self.evaluator.value(node)
            if self.warnings.custom_filters():
                self.warnings.flush()

    def _fp_error(self, node: int, kind: "str | PythonWarning") -> None:
        self.fp_errors.setdefault(node, []).append(kind)
        shown = False
        for site in self.sites.get(node) or [self._own_site(node)]:
            # once shown where a warning shows once, a later place still raises (or calls
            # np.seterrcall's function) where its line's errstate says so, as NumPy does
            # at each computation: np.linalg.norm(t) again under errstate(over='raise')
            if shown and not self.warnings.acts_each_call(site.modes, kind):
                continue
            if self._report(node, site, kind) and not self._warns_per_site(node, kind, site):
                shown = True

    def _warns_per_site(self, node: int, kind: "str | PythonWarning", site: Site) -> bool:
        """Whether NumPy gives this error's warning at each place that computes the node:
        an element-wise ufunc's, at the user's line; a reduction's, at the line of NumPy's
        code its call form runs (Python's registry then shows each such line once).
        Other reductions and NumPy's functions written in Python (np.mean's division)
        warn from NumPy's own file, whose line Python's registry shows once."""
        if isinstance(kind, PythonWarning):
            return False
        if site.per_call:
            return True
        n = self.builder.nodes[node]
        return node not in self.internal and (n.op == "astype" or OPS[n.op].kind is Kind.ELEMWISE)

    def numpy_internal(self, since: int) -> None:
        """The nodes traced since node number `since` are NumPy's internal steps. Each
        warns from its own place in the program, under this line's errstate, even where
        no tracer is made for it (np.std's variance) and a later line gives it again
        (`e.var()` after `np.std(e)`: NumPy warned during the std)."""
        custom = self._errstate()
        for node in range(since, len(self.builder.nodes)):
            self.internal.add(node)
            sites = self.sites.setdefault(node, [])
            if not sites:
                sites.append(self._own_site(node, custom))

    def _report(self, node: int, site: "Site", kind: "str | PythonWarning") -> bool:
        """Report one error of `node` at one of its places; whether it warned there."""
        n = self.builder.nodes[node]
        loc = site.loc or n.loc
        if isinstance(kind, PythonWarning):
            if kind.fp:   # from NumPy's own line, under the line's errstate
                return self.warnings.located(site.position, kind, site.modes)
            # the user's line, or the library file's line that plain execution names
            self.warnings.python(site.position, kind.message, kind if kind.filename else loc, kind.category)
            return True
        label = site.label or getattr(kind, "label", None) or self.labels.get(node) or fp_label(n)
        if kind == "overflow" and not overflow_warns(n.dtype, label):
            return False  # integer arrays wrap around silently (not in MIN // -1); NumPy's integer scalars warn
        line = site.numpy_line
        if line is None and node in self.numpy_steps:
            line = numpy_step_line(*self.numpy_steps[node])
        if line is not None:   # a reduction, or a step of np.mean / np.var: from NumPy's line
            located = PythonWarning(f"{kind} encountered in {label}", RuntimeWarning, *line, fp=True)
            return self.warnings.located(site.position, located, site.modes)
        return self.warnings.fp(site.position, kind, label, loc, site.modes)

    # -- graph breaks --------------------------------------------------------
    def need(self, node: int, why: str, hint: str = "") -> Any:
        """Python needs the concrete value of `node` for `why`: record a graph break
        (or refuse, with --fullgraph) and return the value, computed as NumPy would."""
        expr, use = self.expression()
        if expr.startswith("print(") and expr.endswith(")"):  # the printed value, not the call
            expr, use = expr[len("print("):-1], use or "print"
        what = f"`{expr}`" if expr else "a traced array"
        return self.break_for(node, f"Python needs the value of {what} here ({use or why})", hint)

    def break_for(self, node: int, reason: str, hint: str = "") -> Any:
        """A graph break at `node` for `reason` (or a refusal, with --fullgraph): its value,
        computed now as NumPy would, and what ran so far warns now."""
        self.graph_break(node, reason, hint)
        value = self.evaluator.value(node)
        self._taken_by_python(node)
        # what ran so far warns now: the value goes back to Python, whose later lines
        # (plain NumPy on it) give their own warnings as they run, after these
        self._compute_small()
        self.warnings.flush()
        return value

    def _compute_small(self) -> None:
        """Compute the small nodes that nothing has asked for yet (np.mean of an empty
        slice, an int8 scalar times 2, two lines above a graph break): they cost nothing,
        and their NumPy warnings then take their place in program order, before the
        warnings of the lines after the break, as in plain execution. Small: over empty
        arrays, or of at most _SMALL_RESULT elements from inputs as small and computed."""
        if self.uses_cupy:
            return   # CuPy gives no floating-point warnings
        nodes, b, ev = self.builder.nodes, self.builder, self.evaluator

        def size(j: int) -> int:
            return math.prod(b.aval(j).shape)

        def ready(j: int) -> bool:   # its value costs a look-up
            return ev.has(j) or nodes[j].op in ("input", "const")

        def cheap(j: int) -> bool:   # small and ready, or empty and one step from ready values
            return (size(j) <= _SMALL_RESULT and ready(j)) or (
                size(j) == 0 and (ready(j) or all(ready(k) for k in nodes[j].inputs)))

        # the nodes traced since the last break (a node skipped then stays skipped: a loop
        # of many breaks scans each node once)
        start, self._small_scanned = self._small_scanned, len(nodes)
        for i in range(start, len(nodes)):
            n = nodes[i]
            if n.inputs and not ready(i) and not self.lazy(i) and size(i) <= _SMALL_RESULT and \
                    all(cheap(j) and not self.lazy(j) for j in n.inputs):
                fresh = [j for j in n.inputs if not ev.has(j)]   # computed here with it
                ev.value(i)
                self.for_warnings.update([i, *fresh])

    def _taken_by_python(self, node: int) -> None:
        """`node` and what it was computed from are values Python saw (break values), even
        those _compute_small had computed only for their warnings."""
        stack = [node]
        while stack and self.for_warnings:
            j = stack.pop()
            if j in self.for_warnings or j == node:
                self.for_warnings.discard(j)
                stack.extend(self.builder.nodes[j].inputs)

    def graph_break(self, node: int | None, reason: str, hint: str = "") -> None:
        loc = self.loc()
        if self.fullgraph:
            raise Refused(TraceError(f"graph break with --fullgraph: {reason}", loc, hint or (
                "use np.where(condition, a, b) for an element-wise choice, or drop --fullgraph "
                "to let fuselab compute the value here and go on")))
        last = self.builder.breaks[-1] if self.builder.breaks else None
        if last is not None and last.first == len(self.builder.nodes) and self.evaluator.has(node) \
                and last.loc == loc:
            return  # nothing traced since the last break on this line: the same sync point
        self.builder.graph_break(node, reason, loc)

    def refuse(self, what: str, hint: str) -> Refused:
        return Refused(TraceError(what, self.loc(), hint))

    def warn(self, message: str, category: type = RuntimeWarning, *, numpy_function: str | None = None) -> None:
        """A warning NumPy's Python code would give, where fuselab computes the operation
        itself (`Mean of empty slice`): at the current line, or, for `numpy_function`,
        where NumPy places it for the way the user called it (np.var(x) from NumPy's
        fromnumeric.py, once a session; x.var() from the user's line: numpy_sites.py).
        CuPy's code gives none there (a mean of nothing is NaN, silently, on CuPy 14: the
        GPU fidelity corpus)."""
        if self.uses_cupy:
            return
        site = numpy_site(numpy_function, self.calling_method, message) if numpy_function else None
        self.warnings.python(self.here(), message, site or self.loc(), category)

    def library_warning(self, message: str, category: type = RuntimeWarning,
                        where: tuple[str, int] | None = None) -> None:
        """A warning the library itself gave while a function ran for real (NumPy's or
        CuPy's own code: cupy.nanmax's `All-NaN slice encountered`): given as it is, at
        the current line, or at `where` in the library's file, where plain execution
        shows it (recording.library_line)."""
        loc = PythonWarning(message, category, *where) if where else self.loc()
        self.warnings.python(self.here(), message, loc, category)


# ---------------------------------------------------------------------------
# The tracer array
# ---------------------------------------------------------------------------

class Tracer:
    """Stands for one array object while a cell is traced; operations record nodes."""

    __slots__ = ("_ctx", "_node", "_scalar", "_origin", "_views", "_dtype", "_order", "_temp_view", "__weakref__")
    __array_priority__ = 1000  # win operator dispatch against ndarray and cupy.ndarray

    def __init__(self, ctx: TraceContext, node: int, *, scalar: bool = False,
                 origin: tuple | None = None) -> None:
        self._ctx = ctx
        self._node = node
        # NumPy gives a scalar (np.float64...) here rather than a 0-d array; CuPy and Dask never do
        self._scalar = scalar and not ctx.uses_cupy and not (ctx.uses_dask and ctx.lazy(node))
        # ("view", source tracer) or ("copy", source tracer, how): what NumPy would make
        # this array from, so that binding gives a real view of, or a real copy of, it
        self._origin = origin
        self._views: list[weakref.ref] | None = None
        # the dtype plain NumPy gives this array, when it is the node's in the other byte
        # order (an op that keeps a big-endian array's dtype): the binding converts
        self._dtype: np.dtype | None = None
        # the order of axes NumPy lays a new array out in (layout.py; None: the value's own
        # layout is NumPy's, as a library function's result, or C order), and
        # whether NumPy's array is a view of a new one it made inside the call (`x.T.reshape(-1)`,
        # np.tile: it does not own its memory); an in-place update keeps both
        self._order: tuple[int, ...] | None = None
        self._temp_view = False
        ctx.tracers.append(weakref.ref(self))
        ctx.made(node)

    # -- metadata (static, safe) --------------------------------------------
    @property
    def aval(self) -> Aval:
        return self._ctx.builder.aval(self._node)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        """The dtype plain NumPy's array has (byte order included); the graph computes in
        `aval.dtype`, the same type in the machine's byte order."""
        return self._dtype if self._dtype is not None else self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.aval.nbytes

    @property
    def __class__(self) -> type:  # type: ignore[override]
        """What `isinstance` and `x.__class__` see: the type plain execution would give
        (np.ndarray, np.float64, cupy.ndarray); `type(x)` still says Tracer."""
        if self._scalar:
            return self.dtype.type
        if self._ctx.uses_dask and self._ctx.lazy(self._node):
            return sys.modules["dask.array"].Array
        return self._ctx.array_type

    def __len__(self) -> int:
        if self._scalar:   # a NumPy scalar's own error, not a 0-d array's
            raise TypeError(f"object of type '{_type_name(self)}' has no len()")
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    # -- where Python needs the value: graph breaks --------------------------
    def _value(self, why: str) -> Any:
        """The value plain execution would have here (a NumPy scalar where NumPy gives one),
        in the layout NumPy's array has (a new array's order of axes: `.flags`, `.strides`)."""
        v = self._ctx.need(self._node, why)
        if self._scalar:
            return v[()]
        o = self._origin
        if o is not None and o[0] == "view" and len(o) > 3 and self._ctx.versions.get(id(o[1]), 0) == o[2]:
            # a view whose recorded ops say more than the graph's (new axes of stride 0):
            # taken of its base's value as NumPy takes it
            from ..interp import eval_node
            v = o[1]._value(why)
            for n in o[3]:
                v = eval_node(self._ctx.evaluator.xp, n, [v])
            return v
        if self._order is not None:   # a new array NumPy lays out in this order
            from .layout import with_order
            v = with_order(self._ctx.evaluator.xp, v, self._order)
        return v

    def __bool__(self) -> bool:
        return bool(self._value("a truth value"))

    def __int__(self) -> int:
        return int(self._value("int()"))

    def __float__(self) -> float:
        return float(self._value("float()"))

    def __complex__(self) -> complex:
        return complex(self._value("complex()"))

    def __index__(self) -> int:
        return operator.index(self._value("an index"))

    def __str__(self) -> str:
        if _CTX.get() is not self._ctx:
            return self.__repr__()
        return str(self._value("str()/print()"))

    def __repr__(self) -> str:
        if _CTX.get() is not self._ctx:  # a tracer outside its cell: never a break
            return f"<fuselab traced array {self.aval} (its value exists only inside its %%fuse cell)>"
        return repr(self._value("repr()"))

    def __format__(self, spec: str) -> str:
        return format(self._value("formatting (f-string, format())"), spec)

    def item(self, *args: Any) -> Any:
        return self._value(".item()").item(*args)

    def tolist(self) -> Any:
        return self._value(".tolist()").tolist()

    def __iter__(self):
        if self._scalar:
            raise TypeError(f"'{_type_name(self)}' object is not iterable")
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        n = self.aval.shape[0]
        if n <= (SYMBOLIC_ITERATION_MAX_CUPY if self._ctx.uses_cupy else SYMBOLIC_ITERATION_MAX):
            return ArrayIterator(self, n)
        return iter(self._value("iteration"))

    def __contains__(self, item: Any) -> bool:
        return concrete(item, "`in`") in self._value("`in`")

    def __hash__(self) -> int:
        if not self._scalar:
            raise TypeError(f"unhashable type: '{_type_name(self)}'")
        return hash(self._value("hash()"))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._ctx.uses_cupy:  # as cupy.ndarray does
            raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                            "Please use `.get()` to construct a NumPy array explicitly.")
        v = np.asarray(self._value("conversion to a NumPy array (np.asarray, a library call)")).view()
        v.flags.writeable = False  # the trace's own value: a library must not write into it
        if dtype is not None and v.dtype != dtype:
            return v.astype(dtype, order="C")   # (a new C-ordered array, as ndarray.__array__(dtype) gives)
        handed_out(self, v)
        return v

    def __buffer__(self, flags: int) -> memoryview:
        """The buffer protocol (Python 3.12+: np.ndarray(shape, buffer=x), bytes(x)): a
        graph break; see buffer_of."""
        return buffer_of(self)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        if not self._ctx.uses_cupy:
            raise AttributeError(f"'{_type_name(self)}' object has no attribute 'get'")
        return self._value(".get()").get(*args, **kwargs)

    def __reduce_ex__(self, protocol: int):
        return self._value("pickling").__reduce_ex__(protocol)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SLOTS:
            object.__setattr__(self, name, value)
            return
        if name == "shape" and "_set_shape" in Tracer.__dict__:   # (the NumPy layer's: shapes.set_shape)
            Tracer.__dict__["_set_shape"](self, value)
            return
        if name in ("shape", "dtype", "strides", "data", "flat", "real", "imag"):
            raise self._ctx.refuse(f"setting `.{name}` changes an array in place, which %%fuse does not trace",
                                   "make a new array instead (x = x.reshape(...), x = x.astype(...))")
        raise AttributeError(f"'{_type_name(self)}' object has no attribute '{name}'")


class ArrayIterator:
    """`iter(x)` of a short traced array: its items one at a time, each read when asked for
    (a write into x between two steps shows in the next, as in NumPy). The tracer is held
    in an attribute, which the binder replaces by the array after the cell: an iterator
    left unfinished (`it = iter(x); first = next(it)`, a generator over x) goes on over the
    user's array in later cells, as NumPy's does. Named as Python's sequence iterator, the
    type `iter(ndarray)` gives."""

    __slots__ = ("a", "i", "n")   # (the binder replaces a tracer in a slot too)

    def __init__(self, a: Any, n: int) -> None:
        self.a, self.i, self.n = a, 0, n

    def __iter__(self) -> "ArrayIterator":
        return self

    def __next__(self) -> Any:
        i = self.i
        if i >= self.n:
            raise StopIteration
        self.i = i + 1
        return self.a[i]

    def __length_hint__(self) -> int:
        return max(self.n - self.i, 0)


ArrayIterator.__name__ = ArrayIterator.__qualname__ = "iterator"


_SLOTS = frozenset({"_ctx", "_node", "_scalar", "_origin", "_views", "_dtype", "_order", "_temp_view", "_array",
                    "_name", "_input", "_cur", "_alias"})


def _type_name(t: Tracer) -> str:
    cls = t.__class__
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


_ORIGIN = Tracer.__dict__["_origin"]   # the slot, under InputTracer's property


def origin_of(t: Tracer) -> tuple | None:
    """t's origin as it stands, without making a pending view (aliases.py) of it."""
    return _ORIGIN.__get__(t, Tracer)


class InputTracer(Tracer):
    """The tracer of an array that exists outside the trace (the namespace's arrays,
    arrays made by untraced code): its input node is recorded only when first used, so
    arrays a cell never touches are not inputs."""

    # _alias: None, or "view": the array views another traced array's memory (aliases.py),
    # its node is that view of the owner's, and only the owner is written back; "pending":
    # it will be, when it is first read
    __slots__ = ("_array", "_name", "_input", "_cur", "_alias")

    def __init__(self, ctx: TraceContext, array: Any, name: str | None) -> None:
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "_array", array)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_input", None)
        object.__setattr__(self, "_cur", None)
        object.__setattr__(self, "_alias", None)
        object.__setattr__(self, "_scalar", False)
        object.__setattr__(self, "_origin", None)
        object.__setattr__(self, "_views", None)
        object.__setattr__(self, "_order", None)   # (its layout is its array's)
        object.__setattr__(self, "_temp_view", False)
        object.__setattr__(self, "_dtype", None if array.dtype == native(array.dtype) else array.dtype)
        if is_cupy_array(array):
            ctx.use_cupy(type(array))  # (values at breaks are CuPy's too, not NumPy's)
        ctx.uses_dask |= is_dask_array(array)
        ctx.tracers.append(weakref.ref(self))

    @property  # type: ignore[override]
    def _origin(self) -> tuple | None:
        if object.__getattribute__(self, "_alias") == "pending":
            self._ctx.aliases.express(self)
        return _ORIGIN.__get__(self, Tracer)

    @_origin.setter
    def _origin(self, origin: tuple | None) -> None:
        _ORIGIN.__set__(self, origin)

    @property  # type: ignore[override]
    def _node(self) -> int:
        if object.__getattribute__(self, "_alias") == "pending":
            self._ctx.aliases.express(self)
        held = self._ctx.held
        if held is not None and held.copies and not held.busy:
            held.before_read(self)   # (changed behind the trace's back: read again)
        cur = object.__getattribute__(self, "_cur")
        if cur is not None:
            return cur
        return self.input_node

    @_node.setter
    def _node(self, node: int) -> None:  # an in-place update (x += 1, x[0] = 1): same dtype
        if self._alias is None:
            self._ctx.aliases.check_write(self)
            self.input_node  # the value before the update is an input of the graph
        object.__setattr__(self, "_cur", node)

    @property
    def input_node(self) -> int:
        node = object.__getattribute__(self, "_input")
        if node is None:
            self._ctx.aliases.reading(self)
            node = self._ctx.input_for(self._array, self._name)
            object.__setattr__(self, "_input", node)
        return node

    @property
    def mutated(self) -> bool:
        return self._alias is None and self._cur is not None and self._cur != self._input

    @property
    def aval(self) -> Aval:
        if self._cur is not None:
            return self._ctx.builder.aval(self._cur)
        arr = self._array
        return Aval(tuple(arr.shape), native(np.dtype(arr.dtype)))


_NODE = Tracer.__dict__["_node"]   # the slot, under HeldView's property


class HeldView(Tracer):
    """A view of an array another object holds too (held.py): a read first checks that
    code the trace does not see did not change that array's memory."""

    __slots__ = ()

    @property  # type: ignore[override]
    def _node(self) -> int:
        held = self._ctx.held
        if held is not None and held.copies and not held.busy:
            held.before_read(self)
        return _NODE.__get__(self, Tracer)

    @_node.setter
    def _node(self, node: int) -> None:
        _NODE.__set__(self, node)


_SET_CLASS = object.__dict__["__class__"].__set__


def dask_lazy(ctx: TraceContext, x: Any) -> bool:
    """Is `x` a value plain code holds as a lazy Dask array (a tracer depending on one)?
    NumPy's conversions compute such a value into a NumPy array, and Dask's own methods
    take none of NumPy's order= arguments: those calls run as plain Dask does."""
    return isinstance(x, Tracer) and ctx.uses_dask and ctx.lazy(x._node)


def view_root(t: Tracer) -> "InputTracer | None":
    """The input tracer whose array `t` is, or views (following its view origins)."""
    for _ in range(64):
        # (by type: isinstance() would ask a view for its __class__, which in a Dask cell
        # reads its node, whose held-array check comes back here, without end)
        if issubclass(type(t), InputTracer) and object.__getattribute__(t, "_alias") is None:
            return t
        o = origin_of(t)
        if o is None or o[0] != "view":
            return None
        t = o[1]
    return None


def watch_view(view: Tracer) -> None:
    """`view` views an array another object holds: its reads are checked (HeldView)."""
    if type(view) is Tracer:
        _SET_CLASS(view, HeldView)


def handed_out(t: Tracer, v: Any) -> None:
    """`v`, an array on t's memory (its value), was given to code fuselab does not trace
    (`np.lib.stride_tricks.as_strided(x, ...)`, a library converting with np.asarray): a
    view of it that code returns lives outside the trace, so a later in-place update of
    t, which NumPy would show through it, is refused while it lives (mutate.py)."""
    if isinstance(v, np.ndarray):
        t._ctx.__dict__.setdefault("_handed_out", []).append((weakref.ref(v), weakref.ref(t)))


def handed_view(t: Tracer, value: np.ndarray) -> np.ndarray:
    """A view of t's value to give to code fuselab does not follow (`.flat`, `.data`, a
    memoryview), registered as handed out: an update of t while it lives is refused."""
    view = value.view()
    handed_out(t, view)
    return view


def handed_out_alive(t: Tracer) -> bool:
    """Whether an array given out of t's memory (handed_out) may still be viewed."""
    handed = t._ctx.__dict__.get("_handed_out")
    if not handed:
        return False
    handed[:] = [(v, o) for v, o in handed if v() is not None]
    return any(o() is t for _, o in handed)


def buffer_of(t: Tracer) -> memoryview:
    """The memory of the array plain execution has for t (a graph break): the user's own
    array, writeable, where t is one unchanged, else the trace's value, read-only (a write
    through it would change a value the trace computed from, unseen)."""
    value = t._value("the buffer protocol (memoryview(), np.ndarray(buffer=))")
    if isinstance(value, np.ndarray):
        # (the memory NumPy's later writes into t would change: an update while the
        # memoryview lives is refused, as for a view of another dtype)
        value = handed_view(t, value)
        if not (isinstance(t, InputTracer) and not t.mutated):
            value.flags.writeable = False
    return memoryview(value)


def concrete(value: Any, why: str) -> Any:
    """`value` with every tracer in it (also inside lists, tuples and dicts) replaced by
    the value plain execution would have there; a graph break per tracer."""
    if isinstance(value, Tracer):
        return value._value(why)
    if type(value) in (list, tuple):
        return type(value)(concrete(v, why) for v in value)
    if type(value) is dict:
        return {k: concrete(v, why) for k, v in value.items()}
    return value


def mentions_tracer(values: Any) -> bool:
    for v in values:
        if isinstance(v, Tracer):
            return True
        if type(v) in (list, tuple) and mentions_tracer(v):
            return True
        if type(v) is dict and mentions_tracer(v.values()):
            return True
    return False


def tracing(ctx: TraceContext) -> contextvars.Token:
    return _CTX.set(ctx)


def stop_tracing(token: contextvars.Token) -> None:
    _CTX.reset(token)


# Python's own messages name the type by this ("'numpy.ndarray' object is not callable"),
# as they would for the array plain execution has there.
Tracer.__name__ = InputTracer.__name__ = HeldView.__name__ = "numpy.ndarray"


def register_method(name: str, fn: Callable[..., Any]) -> None:
    """The NumPy layer attaches operators and methods to the tracer through this: an
    array's own methods and properties (not operators, nor fuselab's `_` helpers) as
    _ArrayAttribute, which a tracer standing for a NumPy scalar has only where the
    scalar's type has them."""
    setattr(Tracer, name, fn if name.startswith("_") else _ArrayAttribute(name, fn))


class _ArrayAttribute:
    """An ndarray method or property that NumPy scalars may lack: `np.float32(1.5)` has no
    `.partition` or `.sort`, so `(a * 1).partition(0)` of a 0-d array `a` raises
    AttributeError plainly. Where the tracer stands for such a scalar the lookup fails
    (and Tracer.__getattr__ words NumPy's message); otherwise it is `fn`, bound as a
    method or a property would be."""

    __slots__ = ("name", "fn")

    def __init__(self, name: str, fn: Any) -> None:
        self.name = name
        self.fn = fn

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is not None and obj._scalar and not hasattr(obj.dtype.type, self.name):
            raise AttributeError(self.name)
        return self.fn.__get__(obj, objtype) if hasattr(self.fn, "__get__") else self.fn

    def __set__(self, obj: Any, value: Any) -> None:
        if not hasattr(self.fn, "__set__"):
            raise AttributeError(f"attribute '{self.name}' of 'numpy.ndarray' objects is not writable")
        self.fn.__set__(obj, value)

    def __delete__(self, obj: Any) -> None:
        if not hasattr(self.fn, "__delete__"):
            raise AttributeError(f"cannot delete attribute '{self.name}' of 'numpy.ndarray' objects")
        self.fn.__delete__(obj)
