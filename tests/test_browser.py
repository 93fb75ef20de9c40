"""End to end in a real browser: JupyterLab and Jupyter Notebook 7 (headless servers) and
Chromium (Playwright) run a %%fuse cell, click the Unfused preset and one graph edge, and
check that the kernel clusters and the code panel changed. Screenshots go to
test-artifacts/."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("FUSELAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

CELLS = [
    "%load_ext fuselab\nimport numpy as np\nrng = np.random.default_rng(0)\n"
    "x = rng.random((256, 512), dtype=np.float32)",
    "%%fuse\nt = x * x + 1.0\ny = np.exp(t) * 0.5 - np.sin(x)\ns = y / y.sum(axis=1, keepdims=True)",
]


# how to start each front end, and where it opens a notebook
APPS = {
    "lab": (["lab", "--LabApp.expose_app_in_browser=True"], "lab/tree", "jupyterlab"),
    "notebook": (["notebook", "--JupyterNotebookApp.expose_app_in_browser=True"], "notebooks", "notebook"),
}


def _missing(app: str) -> str:
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (scripts/setup.sh installs it)"
    try:
        __import__(APPS[app][2])
        import playwright.sync_api  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed (pip install -e '.[dev]')"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture(scope="module", params=list(APPS))
def lab(request, tmp_path_factory):
    app = request.param
    why = _missing(app)
    if why:
        pytest.skip(why)
    args, tree, _ = APPS[app]
    work = tmp_path_factory.mktemp(app)
    _notebook(work / "explorer.ipynb")
    # No "news" pop-up over the page.
    (work / "config" / "labconfig").mkdir(parents=True)
    (work / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               JUPYTER_CONFIG_DIR=str(work / "config"), IPYTHONDIR=str(work / "ipython"))
    log = open(work / "lab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", args[0], "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         *args[1:], "--ServerApp.open_browser=False"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.flush()
                    pytest.fail(f"Jupyter {app} did not start:\n" + (work / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield app, base, token, tree
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(work / "lab.log", ARTIFACTS / f"browser_{app}.log")


CLUSTERS = ".fuselab-graph-box svg g.cluster"
CODE = ".fuselab-code .fuselab-code-body"


def _click_edge(page, selector: str) -> str:
    """Click the middle of an edge's path with the real mouse; returns the edge's id."""
    point = page.evaluate("""(sel) => {
        const g = document.querySelector(sel);
        g.scrollIntoView({block: "center"});
        const path = g.querySelector("path:not(.fl-hit)");
        const p = path.getPointAtLength(path.getTotalLength() / 2);
        const m = path.getScreenCTM();
        return {id: g.id, x: p.x * m.a + p.y * m.c + m.e, y: p.x * m.b + p.y * m.d + m.f};
    }""", selector)
    page.mouse.click(point["x"], point["y"])
    return point["id"]


def test_explorer_in_the_browser(lab):
    from playwright.sync_api import sync_playwright

    app, base, token, tree = lab
    shot = "" if app == "lab" else f"_{app}"  # JupyterLab's screenshots keep their names
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2200})
            page.set_default_timeout(60_000)
            page.goto(f"{base}/{tree}/explorer.ipynb?token={token}")
            page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')",
                                   timeout=120_000)
            # Wait for the kernel, then run every cell.
            page.wait_for_function("""() => {
                const w = window.jupyterapp.shell.currentWidget;
                return w && w.sessionContext && w.sessionContext.session &&
                       w.sessionContext.session.kernel && w.sessionContext.session.kernel.status === 'idle';
            }""", timeout=120_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector(CLUSTERS, timeout=180_000)
            page.wait_for_selector(f"{CODE} pre", timeout=60_000)
            before = page.locator(CLUSTERS).count()
            code_before = page.locator(CODE).inner_text()
            page.locator(".fuselab-explorer").screenshot(path=str(ARTIFACTS / f"browser_explorer{shot}_auto.png"))

            page.locator(".fuselab-presets button", has_text="Unfused").click()
            page.wait_for_function(f"(n) => document.querySelectorAll('{CLUSTERS}').length !== n", arg=before)
            unfused = page.locator(CLUSTERS).count()
            assert unfused > before, (before, unfused)

            edge = _click_edge(page, ".fuselab-graph-box svg g.edge.fl-cut")
            page.wait_for_function(f"(n) => document.querySelectorAll('{CLUSTERS}').length !== n", arg=unfused)
            after = page.locator(CLUSTERS).count()
            assert after == unfused - 1, (edge, unfused, after)
            page.wait_for_selector(f"{CODE} pre")
            code_after = page.locator(CODE).inner_text()
            assert code_after and code_after != code_before
            message = page.locator(".fuselab-message").inner_text()
            assert "Not changed" not in message, message
            page.locator(".fuselab-explorer").screenshot(path=str(ARTIFACTS / f"browser_explorer{shot}.png"))
            # The same view in the dark theme, for a person to look at.
            page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
            page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
            page.wait_for_timeout(500)
            page.locator(".fuselab-explorer").screenshot(path=str(ARTIFACTS / f"browser_explorer{shot}_dark.png"))
        finally:
            browser.close()
