#!/usr/bin/env bash
# Long differential fuzzing runs (tests/fuzz): generated cells through fuselab, every plan
# judged against NumPy. The CPU emulator by default; --gpu on a machine with a GPU.
#   bash scripts/fuzz.sh 5000            # CPU emulator
#   bash scripts/fuzz.sh 2000 --gpu      # GPU (writes integer-result digests for the cross-check)
# Accumulated coverage: tests/fuzz/coverage-{emulator,gpu}.json, report in tests/fuzz/COVERAGE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}; shift || true
KIND=emulator
for a in "$@"; do [ "$a" = --gpu ] && KIND=gpu; done
OUT=${FUZZ_OUT:-fuzz-out}
mkdir -p "$OUT"
SEED=${FUZZ_SEED:-$(date +%s)}
cd tests
python3 -m fuzz run -n "$N" --seed "$SEED" "$@" \
    --coverage "../${FUZZ_COVERAGE:-tests/fuzz/coverage-$KIND.json}" \
    --failures "../$OUT/failures-$KIND-$SEED.json" --digests "../$OUT/digests-$KIND-$SEED.json" \
    --report "../$OUT/report-$KIND-$SEED.md"
