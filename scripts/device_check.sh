#!/usr/bin/env bash
# One GPU check-and-benchmark run on the device machine (see TESTING.md): the shape sweep
# against torch.compile (alone, for quiet timings), then the GPU tests, the fidelity corpus
# with CuPy, and the GPU differential fuzzer; logs under $OUT, packed into one
# device_check.tgz (the device tool brings back at most 8 files).
# Usage (from the repository root, on the device): OUT=... bash scripts/device_check.sh [sweep_s tests_s fuzz_s]
# Wheels carried in .whl/ (IPython for the fidelity corpus, Dask for its GPU tests; see
# benchmarks/bench_dask.py) are installed first when present.
set -u
SWEEP_S=${1:-150}; TESTS_S=${2:-240}; FUZZ_S=${3:-120}
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
timeout $((SWEEP_S + 60)) python3 benchmarks/sweep.py --out "$LOGS/sweep.json" --deadline "$SWEEP_S" > "$LOGS/sweep.log" 2>&1
echo "sweep rc=$? $(date -u)" >> "$LOGS/date.txt"
timeout "$TESTS_S" python3 -m pytest -q -p no:cacheprovider -rfE $XDIST tests/test_gpu_cell.py tests/test_gpu_codegen.py \
  tests/test_gpu_runtime.py tests/test_gpu_random.py tests/test_gpu_interop.py tests/test_tune.py \
  tests/test_runtime_breaks.py tests/test_numba_interop.py tests/test_dask.py tests/test_explorer_export.py \
  > "$LOGS/gpu_tests.log" 2>&1
echo "tests rc=$? $(date -u)" >> "$LOGS/date.txt"
timeout "$TESTS_S" python3 -m pytest -q -p no:cacheprovider -rfE $XDIST -m gpu tests/test_fidelity.py \
  > "$LOGS/fidelity_gpu.log" 2>&1
echo "fidelity rc=$? $(date -u)" >> "$LOGS/date.txt"
(cd tests && timeout $((FUZZ_S + 30)) python3 -m fuzz run -n 100000 --gpu --workers 12 --batch 16 \
  --time-limit "$FUZZ_S" --failures "$LOGS/gpu_fail.json" --digests "$LOGS/gpu_digests.json" \
  --coverage "$LOGS/gpu_cov.json" --report "$LOGS/gpu_cov.md") > "$LOGS/fuzz.log" 2>&1
echo "fuzz rc=$? $(date -u)" >> "$LOGS/date.txt"
cd "$OUT" && tar czf device_check.tgz device_check && rm -rf device_check
