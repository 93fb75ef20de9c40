"""python -m fuzz (from tests/, or PYTHONPATH=tests): long differential fuzzing runs.

    python -m fuzz run -n 5000 [--gpu | --numba] [--seed S] [--workers W] [--coverage PATH] [--failures PATH]
    python -m fuzz show SEED [--target KIND:WHERE:OP:DTYPE]      # print one program
    python -m fuzz shrink SEED [--target ...] [--gpu | --numba]    # minimal failing cell
    python -m fuzz report [--coverage PATH]                        # markdown coverage report

scripts/fuzz.sh wraps the run for the README's numbers.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))            # tests/ (cuda_host)
sys.path.insert(0, str(HERE.parent.parent))     # the repository (fuselab)

from fuzz.coverage import Coverage  # noqa: E402
from fuzz.driver import Spec, build_program, crosscheck, run, shrink  # noqa: E402
from fuzz.generator import Target  # noqa: E402


BACKEND_NAMES = {"gpu": "GPU", "emulator": "CPU emulator", "numba": "Numba CPU backend (coverage: of the CUDA code)"}


def _target(text: str | None) -> Target | None:
    return Target(*text.split(":")) if text else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("-n", type=int, default=1000)
    r.add_argument("--gpu", action="store_true")
    r.add_argument("--numba", action="store_true", help="run the plans through the Numba CPU backend")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=None)
    r.add_argument("--batch", type=int, default=24)
    r.add_argument("--coverage", type=Path, default=None)
    r.add_argument("--failures", type=Path, default=None)
    r.add_argument("--digests", type=Path, default=None)
    r.add_argument("--time-limit", type=float, default=None)
    r.add_argument("--report", type=Path, default=None, help="write this run's coverage report (markdown)")
    for name in ("show", "shrink"):
        s = sub.add_parser(name)
        s.add_argument("seed", type=int)
        s.add_argument("--target", default=None)
        s.add_argument("--gpu", action="store_true")
        s.add_argument("--numba", action="store_true")
        s.add_argument("--sm", type=int, default=None)
    x = sub.add_parser("crosscheck", help="re-run another run's programs here; compare integer results bit for bit")
    x.add_argument("digests", type=Path)
    x.add_argument("--gpu", action="store_true")
    x.add_argument("--numba", action="store_true")
    x.add_argument("--workers", type=int, default=None)
    x.add_argument("--limit", type=int, default=None)
    rep = sub.add_parser("report")
    rep.add_argument("--coverage", type=Path, required=True)
    args = ap.parse_args(argv)
    backend = "gpu" if getattr(args, "gpu", False) else "numba" if getattr(args, "numba", False) else "emulator"

    if args.cmd == "run":
        cov, failures = run(args.n, backend, args.seed, args.workers, args.batch,
                            coverage_path=args.coverage, failures_path=args.failures,
                            digests_path=args.digests, time_limit_s=args.time_limit,
                            log=lambda m: print(m, flush=True))
        text = cov.report(f"Fuzzer coverage: this run ({BACKEND_NAMES[backend]})")
        if args.report:
            args.report.write_text(text)
        print(text.split("### Reductions")[0])
        print(f"{cov.programs} programs, {len(failures)} failing")
        return 1 if failures else 0
    if args.cmd == "crosscheck":
        compared, mismatches = crosscheck(args.digests, backend, args.workers,
                                          limit=args.limit, log=lambda m: print(m, flush=True))
        print("\n\n".join(mismatches[:10]))
        print(f"{compared} programs compared bit for bit on integer results, {len(mismatches)} mismatches")
        return 1 if mismatches or not compared else 0
    if args.cmd in ("show", "shrink"):
        spec = Spec(args.seed, _target(args.target))
        if args.cmd == "shrink":
            spec = shrink(spec, backend, args.sm)
        p = build_program(spec, args.sm)
        print(f"# seed {p.seed}, target {p.target}, options {p.options}, deviations {p.deviations}")
        for k, v in p.inputs.items():
            print(f"# {k}: {v.dtype}{list(v.shape)}")
        print(p.source)
        return 0
    print(Coverage.load(args.coverage).report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
