#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian/Ubuntu machine (or CI): system packages, then the
# package with its test dependencies and CuPy (the build for the driver's CUDA, if any).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v dot >/dev/null 2>&1 || need_apt+=(graphviz)
if [ "${FUSELAB_BROWSER:-1}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then need_apt+=(chromium); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi

PY=${PYTHON:-python3}
# CuPy imports without a GPU, so the tests of cupy.fuse / cp.* tracing run everywhere;
# with a driver, the CuPy build of its CUDA major version. `cpu` is Numba (the CPU backend).
extras="dev,cpu,dask,cuda13"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  cuda_major=$(nvidia-smi | sed -n 's/.*CUDA Version: \([0-9]*\).*/\1/p' | head -1)
  extras="dev,cpu,dask,cuda${cuda_major:-13}"
fi
$PY -m pip install -q --disable-pip-version-check -e ".[${extras}]"
