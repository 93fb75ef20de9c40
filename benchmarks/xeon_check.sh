#!/usr/bin/env bash
# The Numba backend's check on the GPU machine's CPU (16-thread Xeon, no network), within
# 240 s: the driver's one-time compile, benchmarks/bench_cpu.py with a fresh kernel cache
# (cold compiles), again on the same cache (disk-cached loads), then the Numba tests (at
# most 100 s, split over 14 processes: after the benchmarks, which they would find
# loaded). Everything goes under $OUT (logs, the two JSON results, a summary).
# Usage, from the repository root of a checkout of this branch:
#   OUT=/some/folder bash benchmarks/xeon_check.sh
# (XEON_TESTS=0 skips step 4, the tests: the benchmarks alone take about 150 s.)
set -u
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
export PYTHONPATH=.
PY=${PYTHON:-python3}
T0=$(date +%s)
log() { echo "$(date -u +%H:%M:%S) +$(( $(date +%s) - T0 ))s $*" | tee -a "$OUT/summary.txt"; }
log "start: $(git log --oneline -1 2>/dev/null); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
$PY -c "import numba, numpy, sys; print('python', sys.version.split()[0], 'numba', numba.__version__, 'numpy', numpy.__version__, 'threads', numba.get_num_threads(), 'layer', numba.config.THREADING_LAYER)" >> "$OUT/summary.txt" 2>&1

# 1. The driver, compiled once per machine (a fresh checkout has no Numba cache of it).
$PY - >> "$OUT/summary.txt" 2>&1 <<'EOF'
import time
t0 = time.perf_counter()
import numba  # noqa: F401
t1 = time.perf_counter()
from fuselab.numba_backend import driver
t2 = time.perf_counter()
d = driver.drive_parallel
print(f"import numba {t1 - t0:.2f} s; driver compiled or loaded in {t2 - t1:.2f} s "
      f"(cache hits {sum(d.stats.cache_hits.values())}, misses {sum(d.stats.cache_misses.values())})")
EOF
log "driver done"

# 2. bench_cpu.py with a fresh kernel cache: cold compiles, then run times.
export FUSELAB_CACHE_DIR="$OUT/cache-bench"
rm -rf "$FUSELAB_CACHE_DIR"
timeout 90 $PY benchmarks/bench_cpu.py "$OUT/cpu_cold.json" --repeats 4 > "$OUT/bench_cold.log" 2>&1
log "bench (cold cache) rc=$?"
# 3. Again, on the same cache: every kernel from Numba's disk cache.
timeout 60 $PY benchmarks/bench_cpu.py "$OUT/cpu_cached.json" --repeats 4 > "$OUT/bench_cached.log" 2>&1
log "bench (cached) rc=$?"
rm -rf "$FUSELAB_CACHE_DIR"
# 4. The Numba tests, -x -q, dealt round-robin to 14 processes (a kernel cache of their
# own), two Numba threads each (the thread-count tests still compare 1 and 2): 14 processes
# of 16 threads loaded the machine to 86 and none finished (2026-12-04). At most 100 s.
# After the benchmarks: the benchmark of 2026-12-05 17:19 ran behind them at load 55 -> 18.
if [ "${XEON_TESTS:-1}" != 0 ]; then
export FUSELAB_CACHE_DIR="$OUT/cache-tests"
$PY -m pytest --collect-only -q -p no:cacheprovider tests/test_numba_*.py 2> /dev/null | grep -E '^tests/[^ ]+::' > "$OUT/test_ids.txt"
N=14
for k in $(seq 0 $((N - 1))); do
  awk -v n=$N -v k=$k '(NR - 1) % n == k' "$OUT/test_ids.txt" > "$OUT/test_ids_$k.txt"
  (mapfile -t ids < "$OUT/test_ids_$k.txt"
   NUMBA_NUM_THREADS=2 timeout 100 $PY -m pytest -x -q -p no:cacheprovider -rfE "${ids[@]}" > "$OUT/tests_$k.log" 2>&1
   echo "tests_$k (${#ids[@]} tests): rc=$? $(tail -1 "$OUT/tests_$k.log")" >> "$OUT/tests_rc.txt") &
done
wait
echo "$(wc -l < "$OUT/test_ids.txt") tests collected" >> "$OUT/summary.txt"
sort "$OUT/tests_rc.txt" >> "$OUT/summary.txt"
log "tests done"
rm -rf "$OUT/cache-tests"
fi

$PY - "$OUT" >> "$OUT/summary.txt" 2>&1 <<'EOF'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
for name in ("cpu_cold.json", "cpu_cached.json"):
    p = out / name
    if not p.exists():
        print(name, "missing"); continue
    d = json.loads(p.read_text())
    print(f"== {name}{' (partial)' if d.get('partial') else ''}: threads {d.get('threads')}, load "
          f"{d.get('load_start')} -> {d.get('load_end')}")
    for r in d["rows"]:
        ks = r["kernel_compile_s"]
        print(f"{r['workload']}: kernel compile {', '.join(f'{v * 1e3:.0f} ms' for v in ks.values())}; "
              f"auto {r['auto_s'] * 1e3:.2f} ms, unfused {r['unfused_s'] * 1e3:.2f} ms, "
              f"NumPy {r['numpy_s'] * 1e3:.1f} ms, {100 * r['copy_fraction']:.0f}% of copy [{r['check']}]"
              + (f"; 256-bit vectors {r['auto_256_s'] * 1e3:.2f} ms" if "auto_256_s" in r else ""))
    print("cached_compile:", json.dumps(d.get("cached_compile", {})))
EOF
log "end"
