"""The IPython shell the magic's tests run cells in: fuselab's extension loaded, a fresh
namespace with NumPy, a float32 vector `x` and a float64 matrix `m`."""
from __future__ import annotations

import pytest


@pytest.fixture()
def ip():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fuselab")
    shell.user_ns.clear()
    shell.run_cell("import numpy as np\nx = np.linspace(0, 1, 1000, dtype=np.float32)\n"
                   "m = np.arange(48, dtype=np.float64).reshape(6, 8) / 7", store_history=False)
    yield shell
    shell.user_ns.clear()
