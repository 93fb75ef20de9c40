"""The `%%fuse` cell magic: flags, the namespace contract, and nothing else.

All computation happens in trace / plan / codegen / runtime through the Session; this
module parses flags, binds results into the notebook only after everything succeeded,
and hands the session to the display.
"""
from __future__ import annotations

import ast
import contextlib
import keyword
import linecache
import os
import sys
from typing import Any, Iterator

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Int, TraitError, Unicode, validate

from .cell import execute_cell
from .trace import Origin

_EXAMPLES = """
Examples
--------
::

    %%fuse
    t = x * x + 1.0
    y = np.exp(t) * 0.5 - np.sin(x)

    %%fuse --plan unfused -o r       # one kernel per op; the session object goes into r
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True)

    %%fuse --backend numba           # kernels compiled for the CPU with Numba, timed against NumPy
    %%fuse --backend cpu --static    # NumPy backend, plain HTML/SVG output for saved notebooks
    %%fuse --keep t -n 50            # also bind t; time with 50 repeats
    %%fuse --fullgraph               # an error, not a graph break, where Python needs a value

After the cell, every name it binds holds what plain execution would give (CuPy arrays
for CuPy inputs, NumPy otherwise), except new intermediates that were fused away, which
are listed (--keep NAME keeps one). Where Python needs a value (`if`, `print`, `float()`),
fuselab computes it there (a graph break) and goes on. On any error no variable changes.
With Dask arrays as inputs the results are lazy Dask arrays whose tasks run each kernel
per block; timing computes them on the current scheduler against the cell as plain Dask.
Defaults can be set with ``%config FuseMagics.backend = 'cpu'`` (also ``plan``,
``repeats``, ``static``, ``time``, ``fp16``).
"""

_CHOICES = {"backend": ("auto", "cuda", "cpu", "numba"), "plan": ("auto", "unfused", "max"), "fp16": ("numpy", "fast")}


def _usage(msg: str) -> UsageError:
    return UsageError(f"%%fuse: {msg}\nSee %%fuse? for the flags and examples.")


@magics_class
class FuseMagics(Magics):
    backend = Unicode("auto", help="Default backend: auto, cuda, numba or cpu").tag(config=True)
    plan = Unicode("auto", help="Default plan: auto, unfused or max").tag(config=True)
    repeats = Int(20, help="Default number of timed repeats (GPU or Numba)").tag(config=True)
    static = Bool(False, help="Show plain HTML/SVG output instead of the interactive explorer").tag(config=True)
    time = Bool(True, help="Time the plan (GPU or Numba) after running it").tag(config=True)
    fp16 = Unicode("numpy", help="float16 math: 'numpy' (op-by-op rounding, equal to NumPy) or "
                                 "'fast' (fp32 inside a kernel)").tag(config=True)

    @validate("backend", "plan", "fp16")
    def _one_of(self, proposal: Any) -> str:
        name, value = proposal["trait"].name, proposal["value"]
        if value not in _CHOICES[name]:
            raise TraitError(f"FuseMagics.{name} = {value!r} is not a choice: use one of "
                             f"{', '.join(repr(c) for c in _CHOICES[name])}")
        return value

    @validate("repeats")
    def _positive(self, proposal: Any) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"FuseMagics.repeats = {proposal['value']} must be a positive number of repeats")
        return proposal["value"]

    @magic_arguments()
    @argument("--backend", choices=_CHOICES["backend"], default=None,
              help="where to run: cuda (GPU via CuPy), numba (each kernel compiled for the CPU, timed), "
                   "cpu (NumPy reference, kernel by kernel), auto (GPU if present, else Numba if installed)")
    @argument("--plan", choices=_CHOICES["plan"], default=None,
              help="fusion plan: auto (cost-model optimum), unfused (one kernel per op), max (largest legal kernels)")
    @argument("--static", action="store_true", default=None,
              help="plain HTML/SVG output (renders on GitHub and nbviewer) instead of widgets")
    @argument("-q", "--quiet", action="store_true",
              help="show no summary or explorer; just run the cell (a failed result check still warns)")
    @argument("-o", dest="output", metavar="VAR", default=None,
              help="store the session object (graph, plan, kernels, outputs, timings) in VAR, "
                   "a name the cell neither reads nor binds")
    @argument("--keep", metavar="NAMES", action="append", nargs="+", default=[],
              help="also bind these intermediates (comma- or space-separated; may repeat)")
    @argument("-n", dest="repeats", type=int, default=None, metavar="REPEATS",
              help="timed repeats (GPU or Numba backend)")
    @argument("--no-time", dest="no_time", action="store_true", help="run without timing")
    @argument("--fp16", choices=_CHOICES["fp16"], default=None,
              help="float16 math: numpy (results equal NumPy) or fast (fp32 inside kernels)")
    @argument("--fullgraph", action="store_true",
              help="refuse graph breaks: an error where Python needs a value in the middle of the cell")
    @cell_magic
    def fuse(self, line: str, cell: str) -> Any:
        """Trace the cell into a graph of array operations, fuse it into kernels, run it, and
        show the graph, the plan and the generated CUDA."""
        args = self._parse(line)
        # --keep t,u / --keep t, u / --keep 't, u' (the magic's argument split keeps quotes)
        keep = tuple(n.strip("'\"") for group in args.keep for item in group
                     for n in item.replace(",", " ").split() if n.strip("'\""))
        for n in keep:
            if not n.isidentifier():
                raise _usage(f"--keep needs variable names, got {n!r}")
        cell = self._cleaned(cell)
        _check_output_name(args.output, cell)
        _check_python_only(cell)
        with self._history_shows(cell):
            run = execute_cell(self.shell.user_ns, cell, keep=keep,
                               backend=args.backend or self.backend,
                               strategy=args.plan or self.plan,
                               static=self.static if args.static is None else True,
                               quiet=args.quiet, output=args.output,
                               repeats=args.repeats or self.repeats,
                               time=self.time and not args.no_time,
                               fp16=args.fp16 or self.fp16,
                               fullgraph=args.fullgraph,
                               origin=self._source_shown(self._origin(), line, cell))
        # the last line's value, as IPython shows and records it (Out[n], _)
        return run.value if run.displays else None

    def _cleaned(self, cell: str) -> str:
        """The body as IPython would run it as a cell of its own: its clean-up of pasted
        input (a common indentation, `>>> ` / `... ` and `In [1]: ` prompts: a `...` line
        after the first is a prompt, and vanishes) applies to the body, which IPython
        hands the magic as typed. (Leading empty lines stay: the lines keep their numbers.)"""
        manager = getattr(self.shell, "input_transformer_manager", None)
        transforms = [t for t in getattr(manager, "cleanup_transforms", ())
                      if getattr(t, "__name__", "") != "leading_empty_lines"]
        lines = cell.splitlines(keepends=True)
        for transform in transforms:
            lines = transform(lines)
        return "".join(lines)

    @contextlib.contextmanager
    def _history_shows(self, cell: str) -> Iterator[None]:
        """While the cell runs, `In[-1]` (and `_ih[-1]`) is its body, as it is for a plain
        cell, not IPython's call of this magic."""
        hist = getattr(getattr(self.shell, "history_manager", None), "input_hist_parsed", None)
        if not isinstance(hist, list) or not hist or "run_cell_magic('fuse'" not in str(hist[-1]):
            yield
            return
        magic_line = hist[-1]
        hist[-1] = cell
        try:
            yield
        finally:
            if hist and hist[-1] is cell:
                hist[-1] = magic_line

    def _parse(self, line: str) -> Any:
        try:
            args = parse_argstring(self.fuse, line)
        except UsageError as e:
            raise _usage(str(e)) from None
        except SystemExit:  # argparse exits on some errors
            raise _usage(f"could not parse flags {line!r}") from None
        if args.repeats is not None and args.repeats < 1:
            raise _usage("-n needs a positive number of repeats")
        return args

    @staticmethod
    def _source_shown(origin: Origin, line: str, cell: str) -> Origin:
        """Python's line cache holds what IPython compiled for the cell, one call of this
        magic; functions the cell defines then have no source for `inspect` (np.vectorize
        and cupy.vectorize of a lambda, Numba's error messages read it). As without the
        magic, the cache gets the cell as the user typed it: its body starts one line down."""
        if origin.line_offset == 1 and origin.filename.startswith(("<ipython-input-", "/")) \
                and not os.path.exists(origin.filename):   # (never a real file's lines)
            # (the magic's line as a comment: the text parses, as cupyx.jit parses it for lambdas)
            text = f"# %%fuse {line}\n{cell}" if line else f"# %%fuse\n{cell}"
            lines = [ln + "\n" for ln in text.split("\n")]
            linecache.cache[origin.filename] = (len(text), None, lines, origin.filename)
        return origin

    def _origin(self) -> Origin:
        """Where IPython compiled this cell: warnings and tracebacks then name its file and
        lines as they would without %%fuse (the cell's body starts one line down)."""
        f = sys._getframe(1)
        while f is not None:
            if f.f_globals is self.shell.user_ns and f.f_code.co_name == "<module>":
                return Origin(f.f_code.co_filename, f.f_lineno)
            f = f.f_back
        return Origin()


def _check_output_name(name: str | None, cell: str) -> None:
    if name is None:
        return
    if not name.isidentifier() or keyword.iskeyword(name):
        raise _usage(f"-o needs a variable name, got {name!r}")
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return  # the trace reports it, with the line
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if name in bound:
        raise _usage(f"-o {name}: the cell itself binds {name!r}; choose another name for the session")
    # the session would replace what the cell reads (`-o x` over `y = x * 2` lost the array x)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if name in read:
        raise _usage(f"-o {name}: the cell reads {name!r}, and the session object would replace it; "
                     "choose another name for the session")


def _is_ipython_line(text: str) -> bool:
    """`%magic`, `!cmd`, and help requests (`x?`, `x??`, `?x`), which IPython expands."""
    return text.startswith(("%", "!", "?")) or (text.endswith("?") and not text.startswith("#"))


def _check_python_only(cell: str) -> None:
    """IPython expands `%magic`, `!cmd` and `x?` lines only outside a cell magic's body."""
    try:
        ast.parse(cell)
    except SyntaxError as e:
        lines = cell.splitlines()
        text = lines[e.lineno - 1].strip() if e.lineno and 0 < e.lineno <= len(lines) else ""
        if text.startswith("%%"):   # (%%time, %%capture... wrap a %%fuse cell from above it)
            raise _usage(f"line {e.lineno}: `{text}` is a cell magic, and a %%fuse cell holds Python only; "
                         f"put `{text}` on the first line, above `%%fuse ...`, to apply both") from None
        if _is_ipython_line(text):
            raise _usage(f"line {e.lineno}: `{text}` is IPython syntax, and a %%fuse cell holds Python only; "
                         "run it in a cell of its own") from None


FuseMagics.fuse.__doc__ = (FuseMagics.fuse.__doc__ or "") + _EXAMPLES
