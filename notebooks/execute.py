"""Run the tour notebooks headless and save them with static outputs.

    python notebooks/execute.py                 # every notebook here, in place
    python notebooks/execute.py 02_*.ipynb      # some of them

The kernel starts with `--FuseMagics.static=True`, so every fuselab display is saved as
plain SVG, HTML and PNG that GitHub and nbviewer render; run live, the same cells show the
interactive explorer. The tests (tests/test_notebooks.py) run the same function.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOUR = sorted(HERE.glob("[0-9][0-9]_*.ipynb"))


def kernel_env() -> dict[str, str]:
    """The environment of the notebook kernel: fuselab importable from this checkout."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def execute(path: Path, static: bool = True, timeout: int = 600):
    """Run every cell of `path` in a fresh kernel; returns the executed notebook (raises
    nbclient's CellExecutionError, with the cell and the traceback, if a cell fails)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=["--FuseMagics.static=True"] if static else [])
    client.execute(env=kernel_env())
    return nb


def main(argv: list[str]) -> int:
    import nbformat

    paths = [HERE / a if not Path(a).is_absolute() else Path(a) for a in argv] or TOUR
    for path in paths:
        print(f"executing {path.name} ...", flush=True)
        nb = execute(path)
        nbformat.write(nb, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
