#!/usr/bin/env bash
# The main job: set up, then open the tour notebooks in JupyterLab.
set -euo pipefail
cd "$(dirname "$0")/.."
FUSELAB_BROWSER=0 bash scripts/setup.sh
PY=${PYTHON:-python3}
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)  # JupyterLab refuses root without it (containers, CI)
exec $PY -m jupyter lab notebooks/01_why_fusion.ipynb "${extra[@]}" "$@"
