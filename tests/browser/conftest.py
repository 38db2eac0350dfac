"""Browser tests drive Debian's Chromium (never a downloaded browser) with Playwright through
a real `licore serve` process, one per test module.

Chromium is installed with apt when it is missing and the tests run as root. With CI=true a
browser test never skips: if Chromium cannot be had the session fails and says why.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.support.locks import exclusive
from tests.support.server import Server, running_server

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get update && apt-get install -y chromium"
ROOT = Path(__file__).resolve().parents[2]


def _install_chromium() -> str:
    """Try apt as root; return what went wrong, or "" when Chromium is there."""
    if CHROMIUM.exists():
        return ""
    with exclusive("apt-get"):
        return _install_chromium_alone()


def _install_chromium_alone() -> str:
    if CHROMIUM.exists():  # another test worker installed it while this one waited
        return ""
    if os.geteuid() != 0:
        return f"{CHROMIUM} is missing and the tests are not root; run: sudo sh -c '{INSTALL}'"
    done = subprocess.run(["sh", "-c", INSTALL], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, check=False)
    if done.returncode != 0 or not CHROMIUM.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return f"`{INSTALL}` failed (exit {done.returncode}): {' | '.join(tail)}"
    return ""


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    problem = _install_chromium()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true and Debian's Chromium is not available: {problem}")
        pytest.skip(f"Debian's Chromium is not available: {problem}")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[Any]:
    """One Chromium a module. Not one a session: while Playwright's sync API is started it
    marks an event loop as running in this thread, which the asyncio tests of other modules
    could not share."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium_path),
                                              headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on SQLite (storage is covered on both backends elsewhere) with a one-second
    poll interval, so an app polling in a test waits one second, not five."""
    url = f"sqlite:///{tmp_path_factory.mktemp('web') / 'licore.db'}"
    with running_server(url, LICORE_DEVICE_INTERVAL="1") as server:
        yield server


@pytest.fixture
def page(browser: Any, site: Server) -> Iterator[Any]:
    """A page of a fresh browser context on the module's site, at a desktop size."""
    context = browser.new_context(base_url=site.url, viewport={"width": 1100, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/screenshots/ when LICORE_SCREENSHOTS=docs (to refresh the
    pictures in the documentation), a scratch directory otherwise."""
    if os.environ.get("LICORE_SCREENSHOTS") == "docs":
        target = ROOT / "docs" / "screenshots"
        target.mkdir(parents=True, exist_ok=True)
        return target
    return tmp_path
