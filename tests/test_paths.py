"""Every disk cache of fuselab under one root (fuselab.paths): FUSELAB_CACHE_DIR, else
$XDG_CACHE_HOME/fuselab, else ~/.cache/fuselab."""
from __future__ import annotations

from pathlib import Path

import pytest


def _caches() -> dict[str, Path]:
    from fuselab.paths import calibration_path
    from fuselab.runtime.compile import cubin_dir
    from fuselab.runtime.tune import cache_path as tuning_path
    found = {"calibration": calibration_path("NVIDIA H200").parent, "cubin": cubin_dir().parent,
             "tuning": tuning_path().parent}
    numba_compile = pytest.importorskip("fuselab.numba_backend.compile")
    found["numba"] = numba_compile.cache_dir().parent
    return found


@pytest.mark.parametrize("env, root", [
    ({"FUSELAB_CACHE_DIR": "{tmp}/mine", "XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/mine"),
    ({"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/fuselab"),
    ({"HOME": "{tmp}/home"}, "{tmp}/home/.cache/fuselab"),
])
def test_every_cache_lives_under_one_root(env, root, tmp_path, monkeypatch):
    for name in ("FUSELAB_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    want = Path(root.format(tmp=tmp_path))
    assert _caches() == dict.fromkeys(_caches(), want)


def test_a_device_name_becomes_a_safe_file_name(tmp_path, monkeypatch):
    from fuselab.paths import calibration_path
    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    path = calibration_path("Intel(R) Xeon(R) Platinum 8480+ / 16 threads")
    assert path.parent == tmp_path and path.name == "calib-Intel_R_Xeon_R_Platinum_8480_16_threads.json"
