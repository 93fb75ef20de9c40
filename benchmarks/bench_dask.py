"""Dask benchmark: %%fuse cells on Dask arrays against the same cells as plain Dask, on
the same cluster.

Cells: the 8-op chain (workloads.CHAIN8) over a 1-D float32 array, and a row softmax over
(rows, 4096) float32 rows, blocks of whole rows. Each is traced and planned once (as the
magic does, without IPython); both versions are then `persist`ed and waited for,
alternating, `--repeats` times (median; the first round, which compiles the kernels on the
workers, is reported apart). Inputs are generated on the workers and persisted first;
results are checked against plain Dask's where they live (only counts come back), on the
first two blocks and the last. On the GPU a round ends when every worker's device has
finished (a task returns once its kernels are queued), and the last column holds the
fused Dask time against the same plan on one CuPy array (`--single-gib`, no Dask), per byte.
`--scheduler threads` runs both on Dask's threaded scheduler in this process instead of a
LocalCluster; the "empty round" column is a round of as many tasks that do nothing, the
scheduler's own cost.

CPU (NumPy chunks, a LocalCluster of one single-threaded worker process per core):

    PYTHONPATH=. python benchmarks/bench_dask.py --gib 8 --chunk-mib 256 --json dask-cpu.json

GPU (CuPy chunks, one worker per GPU: dask_cuda.LocalCUDACluster where installed, else a
worker process per GPU pinned with CUDA_VISIBLE_DEVICES; `--gpus 2` for two GPUs):

    PYTHONPATH=. python benchmarks/bench_dask.py --gpu --gib 32 --chunk-mib 1024 --json dask-gpu.json

The GPU machines have no Dask (their image has its other needs: click, cloudpickle,
fsspec, jinja2, msgpack, psutil, pyyaml, sortedcontainers, toolz, urllib3; and Numba for
the CPU rows). Carry these seven wheels (3 MB, pure Python but tornado's abi3 build):
here, in the repo root,

    echo /.whl/ >> .git/info/exclude
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl \
        dask==2026.8.0 distributed==2026.8.0 partd==1.4.2 locket==1.0.0 tornado==6.6.1 \
        tblib==3.2.2 zict==3.0.0

then on the device (the run tool with carry [".whl"]), CPU rows on its 16 cores and the GPU
rows:

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:. || exit
    python3 benchmarks/bench_dask.py --gib 8 --chunk-mib 256 --json $OUT/dask-cpu.json
    python3 benchmarks/bench_dask.py --gpu --gib 32 --chunk-mib 1024 --json $OUT/dask-gpu.json

Prints a table; writes the rows (and the machine, date, runner) as JSON to `--json`.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import numpy as np  # noqa: E402

from workloads import CHAIN8  # noqa: E402

COLS = 4096


def chain_cell() -> str:
    """CHAIN8 written as notebook code (the same ops, in order)."""
    words = {"multiply": "*", "add": "+", "subtract": "-"}
    expr = "x"
    for op, c in CHAIN8:
        if op in words:
            expr = f"({expr} {words[op]} {c})"
        else:
            expr = f"np.{op}({expr})"
    return f"y = {expr}"


CELLS = {
    "8-op chain": chain_cell(),
    "row softmax": "m = x.max(axis=1, keepdims=True)\ne = np.exp(x - m)\ny = e / e.sum(axis=1, keepdims=True)",
}


@dataclass
class Row:
    cell: str
    shape: tuple[int, ...]
    block: tuple[int, ...]
    gib: float
    workers: str
    runner: str
    fused_s: float
    plain_s: float
    fused_first_s: float
    plain_first_s: float
    fused_tasks: int
    plain_tasks: int
    equal: bool
    # a round of as many tasks that each return their block: the scheduler's own cost
    floor_s: float = 0.0
    # GPU: fuselab on one CuPy array (no Dask), its time scaled to this row's bytes
    single_s: float | None = None

    @property
    def vs_single(self) -> float | None:
        return self.fused_s / self.single_s if self.single_s else None

    @property
    def speedup(self) -> float:
        return self.plain_s / self.fused_s


def make_cluster(args: argparse.Namespace) -> Any:
    from distributed import LocalCluster
    if not args.gpu:
        n = args.workers or os.cpu_count() or 1
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                            memory_limit=0)
    try:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(n_workers=args.gpus, threads_per_worker=args.gpu_threads, dashboard_address=None,
                                memory_limit=0)
    except ImportError:
        return gpu_cluster(args.gpus, args.gpu_threads)


def gpu_cluster(n: int, threads: int = 1) -> Any:
    """One worker process per GPU, each seeing only its GPU (what dask_cuda's
    LocalCUDACluster does, without dask_cuda), running `threads` tasks at a time: a task's
    Python (Dask's bookkeeping, fuselab's launch) then overlaps another's kernels."""
    from distributed import Nanny, Scheduler, SpecCluster
    workers = {f"gpu{i}": {"cls": Nanny, "options": {"nthreads": threads, "memory_limit": 0,
                                                      "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
               for i in range(n)}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": None}})


def layout(cell: str, gib: float, chunk_mib: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The input's shape and block shape: about `gib` GiB of float32 in whole blocks."""
    itemsize = 4
    if cell == "row softmax":
        rows_per_block = max(1, int(chunk_mib * 2**20 // (COLS * itemsize)))
        rows = max(rows_per_block, int(gib * 2**30 // (COLS * itemsize)) // rows_per_block * rows_per_block)
        return (rows, COLS), (rows_per_block, COLS)
    per = int(chunk_mib * 2**20 // itemsize)
    return (max(per, int(gib * 2**30 // itemsize) // per * per),), (per,)


def make_input(cell: str, gib: float, chunk_mib: float, gpu: bool) -> Any:
    import dask.array as da
    shape, chunks = layout(cell, gib, chunk_mib)
    if gpu:  # generated on the GPU, block by block
        import cupy
        return da.empty(shape, chunks=chunks, dtype=np.float32).map_blocks(
            _cupy_normal, dtype=np.float32, meta=cupy.empty((0,) * len(shape), np.float32))
    return da.random.default_rng(0).standard_normal(shape, chunks=chunks, dtype=np.float32)


def _cupy_normal(block: Any, block_id: tuple[int, ...] = ()) -> Any:
    import cupy
    return cupy.random.default_rng(sum(block_id) * 7919 + len(block_id)).standard_normal(block.shape, dtype=np.float32)


def _sync_device() -> None:
    import cupy
    cupy.cuda.Device().synchronize()


class Rounds:
    """One timed round: persist `arr` on the chosen scheduler and wait until its blocks are
    computed, on the GPU until every device involved has finished (a task returns once
    its kernels are queued)."""

    def __init__(self, client: Any, gpu: bool) -> None:
        self.client, self.gpu = client, gpu

    def persist(self, arr: Any) -> Any:
        out = arr.persist()
        if self.client is None:  # Dask's threaded scheduler, in this process: computed by now
            if self.gpu:
                _sync_device()
            return out
        from distributed import wait
        wait(out)
        if self.gpu:
            self.client.run(_sync_device)
        return out

    def seconds(self, arr: Any) -> float:
        t0 = time.perf_counter()
        p = self.persist(arr)
        dt = time.perf_counter() - t0
        del p
        return dt


def _same_block(block: Any) -> Any:
    return block


def bench(rounds: Rounds, name: str, args: argparse.Namespace) -> Row:
    from fuselab.cell import run_cell
    from fuselab.dask.stats import check_lazily, task_count

    x = rounds.persist(make_input(name, args.gib, args.chunk_mib, args.gpu))
    ns: dict[str, Any] = {"np": np, "x": x}
    plain_ns = dict(ns)
    exec(CELLS[name], plain_ns)
    session = run_cell(ns, CELLS[name], quiet=True, time=False, backend=args.backend)
    fused, plain = ns["y"], plain_ns["y"]
    # the scheduler's own cost of a round of as many tasks, doing nothing: a block each
    floor = x.map_blocks(_same_block, dtype=x.dtype)

    first = (rounds.seconds(fused), rounds.seconds(plain))  # compiles kernels on every worker
    ft, pt, lt = [], [], []
    for _ in range(args.repeats):
        ft.append(rounds.seconds(fused))
        pt.append(rounds.seconds(plain))
        lt.append(rounds.seconds(floor))
    # equal on a sample of blocks (the first two and the last): both whole results at once
    # held 64 GiB more on the H200 at the GPU target's 32 GiB and ran out of memory
    last = fused.numblocks[0] - 1
    sample = sorted({0, min(1, last), last})
    ok = check_lazily({"y": fused.blocks[sample]}, {"y": plain.blocks[sample]}).ok
    row = Row(name, tuple(x.shape), tuple(x.chunksize), round(x.nbytes / 2**30, 3), workers(rounds.client, args),
              session.dask_run.runner, statistics.median(ft), statistics.median(pt), first[0], first[1],
              task_count([fused]), task_count([plain]), ok, floor_s=statistics.median(lt))
    del x, fused, plain, floor, ns, plain_ns
    return row


def workers(client: Any, args: argparse.Namespace) -> str:
    if client is None:
        return f"threaded scheduler, {args.threads} thread(s)"
    info = client.scheduler_info()["workers"]
    return f"{len(info)} x {sum(w['nthreads'] for w in info.values()) // max(len(info), 1)} thread(s)"


def _free_gpu_memory(gpu: bool) -> None:
    if gpu:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()


def single_array_seconds(name: str, gib: float, chunk_mib: float) -> float:
    """Seconds per GiB of input for the cell's fused plan on one CuPy array of `gib` GiB
    (no Dask): the per-byte speed the Dask rows are held against."""
    import cupy

    from fuselab import runtime
    from fuselab.cell import run_cell
    from fuselab.runtime.timing import time_gpu

    shape, _ = layout(name, gib, chunk_mib)
    arr = cupy.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    ns: dict[str, Any] = {"np": np, "x": arr}
    session = run_cell(ns, CELLS[name], quiet=True, time=False)
    exe = runtime.Executable(session.plan)
    env = exe.prepare({"x": arr})
    t = time_gpu(lambda: exe.run(env=env), name, repeats=10, warmup=2)
    seconds = t.median_s / (arr.nbytes / 2**30)
    del arr, env, exe, ns, session
    _free_gpu_memory(True)
    return seconds


def table(rows: list[Row]) -> str:
    head = ("| cell | array | block | workers | runner | fused (s) | plain Dask (s) | speed-up | tasks fused / plain "
            "| first round fused / plain (s) | empty round (s) | equal | fused / one-array time per byte |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r.cell} | {r.gib:g} GiB {list(r.shape)} | {list(r.block)} | {r.workers} | {r.runner} | "
                     f"{r.fused_s:.2f} | {r.plain_s:.2f} | **{r.speedup:.2f}x** | {r.fused_tasks} / {r.plain_tasks} | "
                     f"{r.fused_first_s:.2f} / {r.plain_first_s:.2f} | {r.floor_s:.3f} | {'yes' if r.equal else 'NO'} | "
                     f"{f'{r.vs_single:.2f}x' if r.vs_single else '-'} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=8.0, help="size of each input array")
    ap.add_argument("--chunk-mib", type=float, default=256.0, help="bytes per block")
    ap.add_argument("--workers", type=int, default=0, help="CPU: worker processes (default: every core)")
    ap.add_argument("--gpu", action="store_true", help="CuPy chunks, one worker per GPU")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs (workers) with --gpu")
    ap.add_argument("--gpu-threads", type=int, default=1,
                    help="GPU: threads per worker (tasks in flight on each GPU; dask_cuda's default is 1)")
    ap.add_argument("--scheduler", choices=("distributed", "threads"), default="distributed",
                    help="distributed: a LocalCluster (one worker per GPU with --gpu); threads: Dask's threaded "
                         "scheduler in this process (Dask's default without a client), --threads at a time")
    ap.add_argument("--threads", type=int, default=4, help="threads of the threaded scheduler")
    ap.add_argument("--backend", choices=("auto", "cpu"), default="auto",
                    help="block runner: auto (CUDA for CuPy chunks; Numba for NumPy chunks where installed, "
                         "else the NumPy interpreter) or cpu (the NumPy interpreter)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cells", default=",".join(CELLS), help="comma-separated: " + ", ".join(CELLS))
    ap.add_argument("--json", metavar="PATH", help="write the rows as JSON here")
    ap.add_argument("--single-gib", type=float, default=4.0,
                    help="GPU: size of the one CuPy array the per-byte reference runs on")
    args = ap.parse_args()

    rows = []
    if args.scheduler == "threads":
        import dask
        with dask.config.set(scheduler="threads", num_workers=args.threads):
            for name in args.cells.split(","):
                rows.append(bench(Rounds(None, args.gpu), name.strip(), args))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
                _free_gpu_memory(args.gpu)
    else:
        from distributed import Client
        cluster = make_cluster(args)
        with Client(cluster) as client:
            for name in args.cells.split(","):
                rows.append(bench(Rounds(client, args.gpu), name.strip(), args))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
        cluster.close()
    if args.gpu:  # after the cluster is gone: its memory is free again
        for r in rows:
            r.single_s = single_array_seconds(r.cell, args.single_gib, args.chunk_mib) * r.gib
    print()
    print(table(rows))
    if args.json:
        meta = {"date": datetime.date.today().isoformat(), "machine": platform.node(), "cpus": os.cpu_count(),
                "gpu": args.gpu, "load": os.getloadavg(), "args": vars(args)}
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": [asdict(r) | {"speedup": r.speedup, "vs_single": r.vs_single}
                                                                     for r in rows]}, indent=1))


if __name__ == "__main__":
    main()
