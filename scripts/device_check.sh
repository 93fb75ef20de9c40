#!/usr/bin/env bash
# One GPU check-and-benchmark run on the device machine (see TESTING.md), within one
# 600-second command: the shape sweep against torch.compile alone (quiet timings, optional;
# on a fresh machine its first case's first run is a cold one), then side by side the GPU
# differential fuzzer and every GPU-marked test (`pytest -m gpu tests`: the GPU cells,
# codegen, runtime, tuner, the fidelity corpus and red teams with CuPy, Numba interop),
# then the Dask GPU benchmark alone (threaded scheduler, then distributed; dask_s=0 skips it). Logs under $OUT, packed into one
# device_check.tgz (the device tool brings back at most 8 files).
# Usage (from the repository root, on the device):
#   [FUZZ_SEED=S FUZZ_WORKERS=W TEST_PROCS=P] [SWEEP_ARGS="--random 80 --families new --seed 21"] OUT=... bash scripts/device_check.sh [sweep_s=0] [parallel_s=400] [dask_s=90] [dask_threads="1"]
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
XDIST=""; python3 -c "import xdist" 2> /dev/null && XDIST="-n ${TEST_PROCS:-12}"
nvidia-smi > "$LOGS/smi.txt" 2>&1
date -u > "$LOGS/date.txt"; git log --oneline -1 >> "$LOGS/date.txt" 2>&1
note() { echo "$1 rc=$2 $(date -u)" >> "$LOGS/date.txt"; }
if [ "$SWEEP_S" -gt 0 ]; then
  timeout $((SWEEP_S + 60)) python3 benchmarks/sweep.py ${SWEEP_ARGS:-} --out "$LOGS/sweep.json" --deadline "$SWEEP_S" > "$LOGS/sweep.log" 2>&1
  note sweep $?
fi
# The fuzzer's coverage accumulates on the repository's (copy it back to keep it).
cp tests/fuzz/coverage-gpu.json "$LOGS/gpu_cov.json"
(cd tests && timeout $((PARALLEL_S + 20)) python3 -m fuzz run -n 1000000 --gpu --seed ${FUZZ_SEED:-0} --workers ${FUZZ_WORKERS:-4} --batch 16 \
   --time-limit $((PARALLEL_S - 30)) --failures "$LOGS/gpu_fail.json" --digests "$LOGS/gpu_digests.json" \
   --coverage "$LOGS/gpu_cov.json" --report "$LOGS/gpu_cov.md" > "$LOGS/fuzz.log" 2>&1; note fuzz $?) &
# (every GPU-marked test in one pytest: ~300 s over 12 processes on the H200 machine)
(timeout "$PARALLEL_S" python3 -m pytest -q -p no:cacheprovider -rfE $XDIST -m gpu tests \
   > "$LOGS/gpu_tests.log" 2>&1; note "gpu tests" $?) &
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
