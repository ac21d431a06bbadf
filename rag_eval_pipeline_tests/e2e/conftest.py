"""What the browser tests share: headless Chromium driven by Selenium through the Debian chromedriver.

Fixtures: ``chromium_tools`` (the two executables; skips, or fails when the environment variable CI is
set, before anything is started when one of them or the ``selenium`` package is missing),
``browser_window`` (the window size, "WIDTH,HEIGHT" in CSS pixels; a test module overrides it to lay its
page out differently) and ``browser`` (a fresh driver with its own profile in the test's temporary folder,
quit afterwards). Needs ``apt-get install -y chromium chromium-driver`` and ``pip install selenium``.
"""

import os
import shutil

import pytest

RESTRICTED_MARKER = "ZX-INTERNAL-7731"  # in a support-staff chunk of the sample corpus; customers must never see it
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
PAGE_LOAD_TIMEOUT_S = 60


def _missing(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_tools() -> tuple[str, str]:
    """(chromium, chromedriver) paths; skips (fails under CI) when one of them or selenium is missing."""
    browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                   None)
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        _missing("chromium and chromedriver are not installed (apt-get install -y chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        _missing("the Python package selenium is not installed (pip install selenium)")
    return browser, driver


@pytest.fixture
def browser_window() -> str:
    """The browser window's size, "WIDTH,HEIGHT" (Chromium's --window-size)."""
    return "1600,1200"


@pytest.fixture
def browser(chromium_tools, browser_window, tmp_path):
    """A headless Chromium (Selenium WebDriver) with a profile of its own under ``tmp_path``; quit afterwards."""
    chromium, chromedriver = chromium_tools
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (*CHROMIUM_FLAGS, f"--window-size={browser_window}"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.binary_location = chromium
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    try:
        yield driver
    finally:
        driver.quit()
