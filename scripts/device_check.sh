#!/usr/bin/env bash
# One GPU check-and-benchmark run on the device machine (see TESTING.md): the shape sweep
# against torch.compile, the GPU tests, and the GPU differential fuzzer; logs under $OUT.
# Usage (from the repository root, on the device): OUT=... bash scripts/device_check.sh [sweep_s tests_s fuzz_s]
set -u
export PYTHONPATH=.
SWEEP_S=${1:-150}; TESTS_S=${2:-240}; FUZZ_S=${3:-120}
OUT=${OUT:?set OUT to a folder for the logs}
nvidia-smi > "$OUT/smi.txt" 2>&1
date -u > "$OUT/date.txt"
timeout $((SWEEP_S + 60)) python3 benchmarks/sweep.py --out "$OUT/sweep.json" --deadline "$SWEEP_S" > "$OUT/sweep.log" 2>&1
echo "sweep rc=$?" >> "$OUT/date.txt"
timeout "$TESTS_S" python3 -m pytest -q -p no:cacheprovider -rfE tests/test_gpu_cell.py tests/test_gpu_codegen.py \
  tests/test_gpu_runtime.py tests/test_gpu_random.py tests/test_gpu_interop.py tests/test_tune.py \
  tests/test_fidelity.py tests/test_dask.py tests/test_explorer_export.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$?" >> "$OUT/date.txt"
(cd tests && timeout $((FUZZ_S + 30)) python3 -m fuzz run -n 100000 --gpu --workers 12 --batch 16 \
  --time-limit "$FUZZ_S" --failures "$OUT/gpu_fail.json" --digests "$OUT/gpu_digests.json" \
  --coverage "$OUT/gpu_cov.json" --report "$OUT/gpu_cov.md") > "$OUT/fuzz.log" 2>&1
echo "fuzz rc=$?" >> "$OUT/date.txt"
date -u >> "$OUT/date.txt"
