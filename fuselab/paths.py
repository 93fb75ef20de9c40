"""Where fuselab keeps what it caches on disk: FUSELAB_CACHE_DIR, else
$XDG_CACHE_HOME/fuselab, else ~/.cache/fuselab. One module with no imports of its own
beyond the standard library, so that reading a cache never costs importing a backend
(the Numba backend's first plan in a process waited 40 ms on importing the GPU runtime
only to find the CPU calibration's file)."""
from __future__ import annotations

import os
import re
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("FUSELAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselab")
    return Path(base)


def calibration_path(device_name: str) -> Path:
    """The cached calibration of one device (a GPU's or a CPU's, by its name)."""
    return cache_root() / f"calib-{re.sub(r'[^A-Za-z0-9_.-]+', '_', device_name)}.json"
