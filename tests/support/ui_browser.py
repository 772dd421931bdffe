"""A real headless Chromium (Debian's, driven by PyPI playwright) for the web UI
tests, axe-core from the npm registry, and screenshots kept as test artifacts.

Nothing downloads a browser: playwright launches /usr/bin/chromium. axe-core is
installed with npm into build/npm once (a cache every later run reuses).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
NPM_PREFIX = ROOT / "build" / "npm"
AXE = NPM_PREFIX / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


_NO_AXE: list[str] = []  # why npm could not install it, once per session


def axe_source() -> str:
    """axe.min.js, installed from the npm registry into build/npm on first use; a
    skip with npm's first error line where the registry cannot be reached."""
    if not AXE.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed (apt-get install npm): no axe-core")
        if _NO_AXE:
            pytest.skip(_NO_AXE[0])
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        # Several test processes (pytest -n) may get here at once: one installs.
        with open(NPM_PREFIX / ".install-lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not AXE.exists():
                _install_axe(npm)
    return AXE.read_text()


def _install_axe(npm: str) -> None:
    result = subprocess.run(
        [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", "axe-core@4"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode != 0 or not AXE.exists():
        said = [line for line in result.stderr.splitlines() if line.strip()]
        _NO_AXE.append(
            "axe-core could not be installed from the npm registry into build/npm: "
            + (said[0] if said else f"npm exited with {result.returncode}")
        )
        pytest.skip(_NO_AXE[0])


# With script on, the web UI swaps pages in place (htmx's hx-boost), so a click
# returns before the next page is in: a test that reads the page right after a click
# would read the old one. The tests of pages and forms get whole page loads, as
# without htmx: this script, run before the page's own, stops links' clicks and
# forms' submissions from reaching htmx (the browser then loads the page itself).
# The player's tests (test_webui_player_browser.py) ask for `boosted=True` and see
# the UI as a person does.
WHOLE_PAGE_LOADS = """
window.addEventListener("click", function (e) {
  var a = e.target && e.target.closest && e.target.closest("a[href]");
  if (a && !a.hasAttribute("data-play") && !a.hasAttribute("data-seek")) {
    e.stopImmediatePropagation();
  }
}, true);
window.addEventListener("submit", function (e) { e.stopImmediatePropagation(); }, true);
"""


class Browser:
    """playwright's Browser, whose new_context loads whole pages (WHOLE_PAGE_LOADS)
    unless asked for `boosted=True`."""

    def __init__(self, launched: Any) -> None:
        self.launched = launched

    def new_context(self, boosted: bool = False, **options: Any) -> Any:
        context = self.launched.new_context(**options)
        if not boosted:
            context.add_init_script(WHOLE_PAGE_LOADS)
        return context

    def new_page(self, **options: Any) -> Any:
        return self.new_context(**options).new_page()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.launched, name)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per test module. Not per session: playwright's sync API holds an
    event loop on this thread while it runs, and the async tests of later modules
    need the thread's loop free."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield Browser(launched)
        finally:
            launched.close()


def check_accessibility(page: Any, source: str) -> list[dict[str, Any]]:
    """The serious and critical axe-core violations of the page (each with its nodes)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated by the automation protocol, so the page's CSP (no script) allows it.
        page.evaluate(source)
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["html"] for n in v["nodes"]][:5]}
        for v in result
        if v["impact"] in ("serious", "critical")
    ]


def screenshot(page: Any, name: str) -> Path:
    """A full-page PNG under build/screenshots/, kept as a test artifact.

    Chromium sometimes answers a full-page capture with "Unable to capture
    screenshot" when its compositor gives no frame in time (seen on a loaded 2-core
    machine, the page fully loaded). The capture is tried again after the page has
    drawn two more frames (or half a second), three tries in all; any other error,
    or a third refusal, fails the test."""
    from playwright.sync_api import Error as PlaywrightError

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    for _ in range(2):
        try:
            page.screenshot(path=str(path), full_page=True)
            return path
        except PlaywrightError as error:
            if "Unable to capture screenshot" not in str(error):
                raise
            page.evaluate(_NEXT_FRAMES)
    page.screenshot(path=str(path), full_page=True)
    return path


_NEXT_FRAMES = """() => new Promise(done => {
    setTimeout(done, 500);
    requestAnimationFrame(() => requestAnimationFrame(() => done(null)));
})"""


def violations_text(found: list[dict[str, Any]]) -> str:
    return json.dumps(found, indent=2)
