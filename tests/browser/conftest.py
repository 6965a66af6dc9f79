"""A real JupyterLab and a headless Chromium for the browser tests.

One `jupyter lab` (token-less, on 127.0.0.1, isolated settings) and one
Chromium serve the whole session; every test gets a fresh browser context and
its own notebook, and every kernel is shut down through the REST API after the
test. Nothing outlives the session: the server is terminated (then killed),
and any process it left behind is killed too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from ..conftest import free_port, kill_processes

CHROMIUM_NAMES = ("chromium", "chromium-browser")  # Debian's and Ubuntu's names, found on PATH as README says
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
KERNELSPEC = {"name": "uexec", "display_name": "Python 3 (uexec)", "language": "python"}
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
VIEWPORT = {"width": 1280, "height": 800}
SERVER_START_S = 60
EXTENSION_NAME = "unified-exec-kernel"  # the lab extension, and the npm name in its scripts' URLs

# Records every `resize` the page sends on a kernel websocket (the live view's
# custom message), so a test waits for the PTY's new size to be on its way
# instead of racing the view's fit timer.
RESIZE_RECORDER_JS = r"""
(() => {
  const Original = window.WebSocket;
  const sent = window.__uexecResizes = [];
  const decoder = new TextDecoder();
  const pattern = /"type":\s*"resize",\s*"rows":\s*(\d+),\s*"cols":\s*(\d+)/g;
  class Recording extends Original {
    send(data) {
      let text = '';
      if (typeof data === 'string') text = data;
      else if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) text = decoder.decode(data);
      for (const m of text.matchAll(pattern)) sent.push([Number(m[1]), Number(m[2])]);
      return super.send(data);
    }
  }
  window.WebSocket = Recording;
})();
"""


class Lab:
    """A running `jupyter lab`: its URL, root folder and REST API."""

    def __init__(self, root: Path, port: int, process: subprocess.Popen, log: Path):
        self.root = root
        self.port = port
        self.process = process
        self.log = log
        self.url = f"http://127.0.0.1:{port}"

    def api(self, method: str, path: str, body=None, timeout: float = 10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """A notebook on the uexec kernel with these code cells; returns its /lab/tree URL."""
        notebook = {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}},
            "cells": [
                {
                    "cell_type": "code",
                    "id": f"cell-{index}",
                    "metadata": {},
                    "execution_count": None,
                    "outputs": [],
                    "source": source,
                }
                for index, source in enumerate(cells)
            ],
        }
        (self.root / f"{name}.ipynb").write_text(json.dumps(notebook, indent=1))
        return f"{self.url}/lab/tree/{name}.ipynb"

    def shutdown_kernels(self) -> None:
        try:
            kernels = self.api("GET", "/api/kernels")
        except (OSError, urllib.error.URLError):
            return
        for kernel in kernels:
            try:
                self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=15)
            except (OSError, urllib.error.URLError):
                pass


def _wait_ready(lab: Lab, path: str = "/api/status") -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise RuntimeError(f"the server exited with {lab.process.returncode}:\n{lab.log_tail()}")
        try:
            with urllib.request.urlopen(f"{lab.url}{path}", timeout=2):
                return
        except (OSError, urllib.error.URLError):
            time.sleep(0.2)
    raise RuntimeError(f"the server was not ready after {SERVER_START_S} s:\n{lab.log_tail()}")


def _stop(process: subprocess.Popen) -> None:
    try:
        leftovers = psutil.Process(process.pid).children(recursive=True)
    except psutil.Error:
        leftovers = []
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    kill_processes(leftovers, timeout=5)


_skipped_for_want_of_chromium: list[str] = []


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    if found:
        return found
    message = f"no Chromium on PATH (looked for {', '.join(CHROMIUM_NAMES)}): install it, e.g. apt-get install -y chromium"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}; CI must run the browser tests, never skip them")
    _skipped_for_want_of_chromium.append(message)
    pytest.skip(message)


def pytest_terminal_summary(terminalreporter):
    """A skipped browser suite is easy to miss among passes: say it in red at the end."""
    if _skipped_for_want_of_chromium:
        terminalreporter.write_sep("!", f"BROWSER TESTS SKIPPED: {_skipped_for_want_of_chromium[0]}", red=True, bold=True)


def isolated_env(base: Path) -> dict[str, str]:
    """This interpreter's environment with JupyterLab's settings, workspaces and runtime files under `base`."""
    settings, workspaces, runtime = (base / name for name in ("settings", "workspaces", "runtime"))
    for folder in (settings, workspaces, runtime):
        folder.mkdir(exist_ok=True)
    # No "get notified about Jupyter news?" toast over the page (Notebook 7 has the same plugin).
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # Nor ours ("session 3 exited ... after 12 s") over what a test clicks: test_notifications.py turns them on.
    ours = settings / EXTENSION_NAME / "notifications.jupyterlab-settings"
    ours.parent.mkdir(parents=True)
    ours.write_text(json.dumps({"enabled": False}))
    # nbgrader (the test extra has it, for tests/test_grading.py) adds toolbar buttons and a sidebar that
    # push the notebook's kernel status into the toolbar's overflow menu: a page as most users have it.
    config = base / "config"
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {"@jupyter/nbgrader": True}}))
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(workspaces),
        JUPYTER_RUNTIME_DIR=str(runtime),
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    )
    env.pop("JUPYTER_TOKEN", None)
    return env


def disable_labextension(env: dict[str, str], base: Path, name: str) -> None:
    """`jupyter labextension disable` in a config dir of its own: only servers started with `env` see it."""
    config = base / "config"
    config.mkdir(exist_ok=True)
    env["JUPYTER_CONFIG_DIR"] = str(config)
    subprocess.run(
        [shutil.which("jupyter", path=env["PATH"]) or "jupyter", "labextension", "disable", "--level=user", name],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )


@contextlib.contextmanager
def jupyter_server(base, app: str, env: dict[str, str] | None = None, args: tuple[str, ...] = (), *, collaborative: bool = False):
    """A `jupyter lab`, `jupyter notebook` or `voila` on loopback, isolated in `base`, always stopped.

    Real-time collaboration (jupyter-collaboration, installed by the test extra) is off
    unless `collaborative`: a person's JupyterLab is what most tests are about.
    """
    root = base / "root"
    root.mkdir()
    env = env or isolated_env(base)
    port = free_port()
    jupyter = shutil.which("jupyter", path=env["PATH"]) or "jupyter"
    log = base / f"{app}.log"
    if app == "voila":
        # Voilà runs a server of its own: its options, and no tree page but the notebook folder.
        command = [shutil.which("voila", path=env["PATH"]) or "voila", "--no-browser", "--Voila.ip=127.0.0.1"]
        command += [f"--Voila.port={port}", "--Voila.port_retries=0", f"--Voila.root_dir={root}"]
    else:
        command = [
            jupyter,
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            # The lab server extension (which also serves /lab/api/news) runs under Notebook 7 too.
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=None",
            f"--YDocExtension.disable_rtc={not collaborative}",
        ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, *args],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Lab(root, port, process, log)
    try:
        _wait_ready(server, "/" if app == "voila" else "/api/status")
        yield server
    finally:
        server.shutdown_kernels()
        _stop(process)


@pytest.fixture(scope="package")
def lab(tmp_path_factory, chromium_path) -> Lab:
    with jupyter_server(tmp_path_factory.mktemp("lab"), "lab") as server:
        yield server


# Package scope, not session: Playwright's sync API keeps an asyncio loop
# running on the main thread while it lives, and every asyncio test after the
# browser tests would then fail with "cannot be called from a running event loop".
@pytest.fixture(scope="package")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@contextlib.contextmanager
def fresh_page(browser, server: Lab):
    """A page in a browser context of its own; afterwards the server's kernels are shut down."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    context.add_init_script(RESIZE_RECORDER_JS)
    try:
        yield context.new_page()
    finally:
        context.close()
        server.shutdown_kernels()


@pytest.fixture
def page(browser, lab):
    with fresh_page(browser, lab) as page:
        yield page


# Our lab extension's scripts, and the widget module as anywidget reports it (by class name, or its own prefix).
OURS = re.compile(r"unified[-_]exec[-_]kernel|\[anywidget\]")


def extension_errors(page) -> list[str]:
    """Collects, from now on, the page's uncaught errors and console errors/warnings from our code."""
    errors: list[str] = []

    def on_page_error(error) -> None:
        text = f"{error.message}\n{error.stack or ''}"
        if OURS.search(text):
            errors.append(f"pageerror: {text}")

    def on_console(message) -> None:
        if message.type not in ("error", "warning"):
            return
        text = f"{message.text} @ {message.location.get('url', '')}"
        if OURS.search(text):
            errors.append(f"console.{message.type}: {text}")

    page.on("pageerror", on_page_error)
    page.on("console", on_console)
    return errors


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        # The servers' own words (a Lab, a gateway): what a page's failure alone cannot say.
        if callable(getattr(value, "log_tail", None)):
            report.sections.append((f"the log of {name} (its end)", value.log_tail(12_000)))
    page = getattr(item, "funcargs", {}).get("page")
    if page is None or page.is_closed():
        return
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        page.screenshot(path=str(ARTIFACTS / f"{item.name}.png"), full_page=True, timeout=10_000)
    except Exception as error:  # a failed screenshot must not hide the test's own failure
        report.sections.append(("screenshot", f"could not save a screenshot: {error}"))
