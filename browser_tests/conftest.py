"""Browser tests: a real headless Chromium (the system's, e.g. Debian's `chromium` package) driven by
Playwright for Python. Run with `make test-browser`; they are not part of `make test`.

Nothing here skips: a missing browser, a missing Playwright or an unbuilt site fails with a message
saying how to get it.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
SCREENSHOTS = ROOT / "build" / "screenshots"
#: Flags for a headless Chromium that makes no network call of its own (updates, sync, QUIC probes).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync", "--disable-quic"]
INSTALL_HINT = ("install Chromium and a CJK font: `sudo apt-get install -y chromium fonts-noto-cjk` "
                "(Debian/Ubuntu; any Chromium works: set CHROMIUM=/path/to/chromium), then "
                "`make test-browser`")


def find_chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        pytest.fail(f"no Chromium found: {INSTALL_HINT}", pytrace=False)
    return path


def pytest_sessionstart(session):
    """Stop at once, with one message, when the browser or Playwright is missing."""
    if find_chromium() is None:
        pytest.exit(f"browser tests: no Chromium found - {INSTALL_HINT}", returncode=1)
    if importlib.util.find_spec("playwright") is None:
        pytest.exit("browser tests: Playwright is not installed - `make test-browser` installs the "
                    "`site` extra (pip install -e '.[site]')", returncode=1)


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is not installed: `make test-browser` installs the `site` extra "
                    "(pip install -e '.[site]')", pytrace=False)
    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").exists():
        pytest.fail("build/site/index.html is missing: run `make site` first", pytrace=False)
    return SITE
