"""The `%%fuse` cell magic: flags, the namespace contract, and nothing else.

All computation happens in trace / plan / codegen / runtime through the Session; this
module parses flags, binds results into the notebook only after everything succeeded,
and hands the session to the display.
"""
from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.core.error import UsageError
from traitlets import Bool, Int, Unicode

from .cell import run_cell

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

    %%fuse --backend cpu --static    # NumPy backend, plain HTML/SVG output for saved notebooks
    %%fuse --keep t -n 50            # also bind t; time with 50 repeats

After the cell, the names it assigns and does not read again later hold exactly what
plain execution would give (CuPy arrays for CuPy inputs, NumPy otherwise); names that
were fused away are listed and removed. On any error no variable changes.
Defaults can be set with ``%config FuseMagics.backend = 'cpu'`` (also ``plan``,
``repeats``, ``static``, ``time``, ``fp16``).
"""


def _usage(msg: str) -> UsageError:
    return UsageError(f"%%fuse: {msg}\nSee %%fuse? for the flags and examples.")


@magics_class
class FuseMagics(Magics):
    backend = Unicode("auto", help="Default backend: auto, cuda or cpu").tag(config=True)
    plan = Unicode("auto", help="Default plan: auto, unfused or max").tag(config=True)
    repeats = Int(20, help="Default number of timed repeats on the GPU").tag(config=True)
    static = Bool(False, help="Show plain HTML/SVG output instead of the interactive explorer").tag(config=True)
    time = Bool(True, help="Time the plan on the GPU after running it").tag(config=True)
    fp16 = Unicode("numpy", help="float16 math: 'numpy' (op-by-op rounding, equal to NumPy) or "
                                 "'fast' (fp32 inside a kernel)").tag(config=True)

    @magic_arguments()
    @argument("--backend", choices=("auto", "cuda", "cpu"), default=None,
              help="where to run: cuda (GPU via CuPy), cpu (NumPy reference), auto (GPU if present)")
    @argument("--plan", choices=("auto", "unfused", "max"), default=None,
              help="fusion plan: auto (cost-model optimum), unfused (one kernel per op), max (largest legal kernels)")
    @argument("--static", action="store_true", default=None,
              help="plain HTML/SVG output (renders on GitHub and nbviewer) instead of widgets")
    @argument("-q", "--quiet", action="store_true", help="show nothing; just run the cell")
    @argument("-o", dest="output", metavar="VAR", default=None,
              help="store the session object (graph, plan, kernels, outputs, timings) in VAR")
    @argument("--keep", metavar="NAMES", action="append", default=[],
              help="also bind these intermediates (comma-separated; may repeat)")
    @argument("-n", dest="repeats", type=int, default=None, metavar="REPEATS",
              help="timed repeats on the GPU")
    @argument("--no-time", dest="no_time", action="store_true", help="run without timing")
    @argument("--fp16", choices=("numpy", "fast"), default=None,
              help="float16 math: numpy (results equal NumPy) or fast (fp32 inside kernels)")
    @cell_magic
    def fuse(self, line: str, cell: str) -> None:
        """Trace the cell into a graph of array operations, fuse it into kernels, run it, and
        show the graph, the plan and the generated CUDA."""
        try:
            args = parse_argstring(self.fuse, line)
        except UsageError as e:
            raise _usage(str(e)) from None
        except SystemExit:  # argparse exits on some errors
            raise _usage(f"could not parse flags {line!r}") from None
        if args.repeats is not None and args.repeats < 1:
            raise _usage("-n needs a positive number of repeats")
        if args.output is not None and not args.output.isidentifier():
            raise _usage(f"-o needs a variable name, got {args.output!r}")
        keep = tuple(n.strip() for item in args.keep for n in item.split(",") if n.strip())
        for n in keep:
            if not n.isidentifier():
                raise _usage(f"--keep needs variable names, got {n!r}")
        run_cell(self.shell.user_ns, cell, keep=keep,
                        backend=args.backend or self.backend,
                        strategy=args.plan or self.plan,
                        static=self.static if args.static is None else True,
                        quiet=args.quiet, output=args.output,
                        repeats=args.repeats or self.repeats,
                        time=self.time and not args.no_time,
                        fp16=args.fp16 or self.fp16)
        return None  # results are bound by name; the explorer is displayed, not returned


FuseMagics.fuse.__doc__ = (FuseMagics.fuse.__doc__ or "") + _EXAMPLES
