"""The browser for the web page's tests: Debian's chromium, driven by its own chromedriver."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Selenium and its trio live beside the environment, not in it (see pyproject's browser-tests):
# last on the path, so the environment's own packages come first.
BROWSER_TESTS = Path(sys.prefix) / "browser-tests"
if str(BROWSER_TESTS) not in sys.path:
    sys.path.append(str(BROWSER_TESTS))
# Screenshots: every browser test's on failure, and the library's for the README on each run.
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[FAILED] = report.failed


FAILED = pytest.StashKey[bool]()
BROWSER_ARGUMENTS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--mute-audio", "--autoplay-policy=no-user-gesture-required")
# The tests send traffic to loopback only: none of the browser's own services (updates, safe
# browsing, metrics, sync), and no host name resolves but loopback's.
LOOPBACK_ONLY = ("--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-pings",
                 "--disable-domain-reliability", "--disable-client-side-phishing-detection",
                 "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1")


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[object]:
    """A headless chromium. Without one it skips, unless TRAWL_TEST_BROWSER=required (``.ci/run``
    installs chromium and sets it), where a missing browser fails."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = next((found for name in CHROMIUM if (found := shutil.which(name))), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        message = "the browser tests need chromium and chromedriver (apt-get install chromium chromium-driver)"
        if os.environ.get("TRAWL_TEST_BROWSER") == "required":
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (*BROWSER_ARGUMENTS, *LOOPBACK_ONLY):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        if request.node.stash.get(FAILED, False):
            ARTIFACTS.mkdir(exist_ok=True)
            driver.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))
        driver.quit()
