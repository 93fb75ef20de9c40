#!/usr/bin/env bash
# The whole test suite, set-up included. GPU tests skip cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
exec $PY -m pytest -q "$@"
