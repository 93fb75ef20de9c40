"""fuselab's own overhead on the CPU backend: a 10M-element cell run plainly and as
`%%fuse -q --backend cpu` in one IPython shell, interleaved, plus where the fused run's
time goes (trace, plan, run, bind). Not a test: figures for BENCHMARKS.md.

    python benchmarks/overhead.py            # print the table
    python benchmarks/overhead.py --write    # and replace "## CPU overhead" in BENCHMARKS.md
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fuselab.cell as cell_mod  # noqa: E402
import fuselab.session as session_mod  # noqa: E402
import fuselab.trace.bind as trace_bind  # noqa: E402

N = 10_000_000
CELLS = {
    "elementwise chain": "t = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)",
    "softmax rows": "e = np.exp(m - m.max(axis=1, keepdims=True))\np = e / e.sum(axis=1, keepdims=True)",
    "with a graph break": "y = x * 2 + 1\nif y.mean() > 0:\n    z = np.sqrt(np.abs(y))\nelse:\n    z = -y",
}
SETUP = (f"import numpy as np\nrng = np.random.default_rng(0)\nx = rng.random({N}, dtype=np.float32)\n"
         f"m = rng.random(({N // 1000}, 1000), dtype=np.float32)")


class Stages:
    """Wall time spent in each stage of the fused runs (wrapping the stage functions)."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def wrap(self, owner, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.times.setdefault(label, []).append(time.perf_counter() - t0)
        setattr(owner, name, timed)


def measure(rounds: int) -> list[dict]:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "fuselab")
    ip.run_cell(SETUP, store_history=False)
    stages = Stages()
    stages.wrap(cell_mod, "trace_cell", "trace")
    stages.wrap(session_mod.Session, "__init__", "plan")
    stages.wrap(session_mod.Session, "execute", "run")
    stages.wrap(trace_bind.Binder, "commit", "bind")
    rows = []
    for name, cell in CELLS.items():
        plain, fused, shown = [], [], []
        stages.times.clear()
        for r in range(rounds):  # alternating, so both see the same machine
            runs = [("plain", cell, plain), ("fuse", "%%fuse -q --backend cpu\n" + cell, fused)]
            if r < 3:  # the explorer's static view too (Graphviz, code generation, highlighting)
                runs.append(("shown", "%%fuse --static --backend cpu\n" + cell, shown))
            for kind, text, acc in runs:
                t0 = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    assert ip.run_cell(text, store_history=False).success, (kind, name)
                acc.append(time.perf_counter() - t0)
        med = {k: statistics.median(v[:rounds]) for k, v in stages.times.items()}
        rows.append({"cell": name, "plain": statistics.median(plain), "fuse": statistics.median(fused),
                     "plain_min": min(plain), "fuse_min": min(fused), "shown": statistics.median(shown), **med})
    return rows


def table(rows: list[dict], rounds: int) -> str:
    out = [f"Median of {rounds} interleaved runs in one IPython shell (minimum in brackets); "
           f"`x` has {N:,} float32 elements, `m` is {N // 1000:,} x 1,000 float32. "
           f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, NumPy {np.__version__}.",
           "",
           "| cell | plain NumPy | `%%fuse -q --backend cpu` | ratio | trace | plan | run | bind | with `--static` view |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = lambda v: f"{v * 1e3:.0f} ms"  # noqa: E731
        out.append(f"| {r['cell']} | {ms(r['plain'])} ({ms(r['plain_min'])}) | {ms(r['fuse'])} "
                   f"({ms(r['fuse_min'])}) | {r['fuse'] / r['plain']:.2f} | "
                   + " | ".join(f"{r.get(k, 0) * 1e3:.1f} ms" for k in ("trace", "plan", "run", "bind"))
                   + f" | {ms(r['shown'])} |")
    return "\n".join(out)


SECTION = "## CPU overhead"


def write(text: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    doc = path.read_text()
    block = (f"{SECTION}\n\nWhat `%%fuse` costs beyond the computation on the CPU backend "
             f"(`python benchmarks/overhead.py --write`, {time.strftime('%Y-%m-%d')}).\n\n{text}\n")
    if SECTION in doc:
        doc = re.sub(rf"{SECTION}\n.*?(?=\n## |\Z)", block.rstrip("\n") + "\n", doc, flags=re.S)
    else:
        doc = doc.rstrip("\n") + "\n\n" + block
    path.write_text(doc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--write", action="store_true")
    args = p.parse_args()
    text = table(measure(args.rounds), args.rounds)
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
