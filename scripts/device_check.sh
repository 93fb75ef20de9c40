#!/usr/bin/env bash
# One GPU check-and-benchmark run on the device machine (see TESTING.md), within one
# 600-second command: the shape sweep against torch.compile alone (quiet timings, optional),
# then side by side the GPU differential fuzzer, the GPU tests and the fidelity corpus with
# CuPy, then the Dask GPU benchmark alone (threaded scheduler, then distributed). Logs under $OUT, packed into one
# device_check.tgz (the device tool brings back at most 8 files).
# Usage (from the repository root, on the device):
#   [FUZZ_SEED=S FUZZ_WORKERS=W] [SWEEP_ARGS="--random 80 --families new --seed 21"] OUT=... bash scripts/device_check.sh [sweep_s=0] [parallel_s=400] [dask_s=90] [dask_threads="1"]
# (dask_threads: one Dask benchmark run, of dask_s at most, per thread count of the GPU worker)
# Wheels carried in .whl/ (IPython for the fidelity corpus, Dask for its tests and
# benchmark; see benchmarks/bench_dask.py) are installed first when present.
set -u
SWEEP_S=${1:-0}; PARALLEL_S=${2:-400}; DASK_S=${3:-90}; DASK_THREADS=${4:-1}
OUT=${OUT:?set OUT to a folder for the logs}
LOGS="$OUT/device_check"; mkdir -p "$LOGS"
export PYTHONPATH=.
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    > "$LOGS/pip.log" 2>&1 && export PYTHONPATH=/tmp/site:.
fi
XDIST=""; python3 -c "import xdist" 2> /dev/null && XDIST="-n 4"
nvidia-smi > "$LOGS/smi.txt" 2>&1
date -u > "$LOGS/date.txt"; git log --oneline -1 >> "$LOGS/date.txt" 2>&1
note() { echo "$1 rc=$2 $(date -u)" >> "$LOGS/date.txt"; }
if [ "$SWEEP_S" -gt 0 ]; then
  timeout $((SWEEP_S + 60)) python3 benchmarks/sweep.py ${SWEEP_ARGS:-} --out "$LOGS/sweep.json" --deadline "$SWEEP_S" > "$LOGS/sweep.log" 2>&1
  note sweep $?
fi
# The fuzzer's coverage accumulates on the repository's (copy it back to keep it).
cp tests/fuzz/coverage-gpu.json "$LOGS/gpu_cov.json"
(cd tests && timeout $((PARALLEL_S + 20)) python3 -m fuzz run -n 1000000 --gpu --seed ${FUZZ_SEED:-0} --workers ${FUZZ_WORKERS:-8} --batch 16 \
   --time-limit $((PARALLEL_S - 30)) --failures "$LOGS/gpu_fail.json" --digests "$LOGS/gpu_digests.json" \
   --coverage "$LOGS/gpu_cov.json" --report "$LOGS/gpu_cov.md" > "$LOGS/fuzz.log" 2>&1; note fuzz $?) &
(timeout "$PARALLEL_S" python3 -m pytest -q -p no:cacheprovider -rfE $XDIST tests/test_gpu_cell.py \
   tests/test_gpu_codegen.py tests/test_gpu_runtime.py tests/test_gpu_random.py tests/test_gpu_interop.py \
   tests/test_tune.py tests/test_runtime_breaks.py tests/test_dask.py tests/test_explorer_export.py \
   > "$LOGS/gpu_tests.log" 2>&1; note tests $?) &
(timeout "$PARALLEL_S" python3 -m pytest -q -p no:cacheprovider -rfE ${XDIST:+-n 2} -m gpu tests/test_fidelity.py \
   tests/test_cupy_cells.py > "$LOGS/fidelity_gpu.log" 2>&1; note fidelity $?
 timeout 120 python3 -m pytest -q -p no:cacheprovider -rfE tests/test_numba_interop.py > "$LOGS/numba_interop.log" 2>&1
 note numba_interop $?) &
wait
if python3 -c "import distributed" 2> /dev/null && [ "$DASK_S" -gt 0 ]; then
  timeout "$DASK_S" python3 benchmarks/bench_dask.py --gpu --gib 32 --chunk-mib 2048 --repeats 3 \
    --scheduler threads --threads 4 --json "$LOGS/dask-gpu-threaded.json" > "$LOGS/dask_gpu_threaded.log" 2>&1
  note "dask threaded scheduler" $?
  for t in $DASK_THREADS; do   # threads of the one distributed GPU worker
    timeout "$DASK_S" python3 benchmarks/bench_dask.py --gpu --gib 32 --chunk-mib 2048 --repeats 3 \
      --gpu-threads "$t" --json "$LOGS/dask-gpu-t$t.json" > "$LOGS/dask_gpu_t$t.log" 2>&1
    note "dask threads=$t" $?
  done
fi
cd "$OUT" && tar czf device_check.tgz device_check && rm -rf device_check
