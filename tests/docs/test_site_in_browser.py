"""The built site in a real browser (Debian's headless chromium, as the console's tests use):
the home page, a guide and the HTTP API reference render with their navigation and without a
browser error, served over HTTP from the built files. A screenshot of each is saved
(`MINISPHERE_SITE_SCREENSHOTS` chooses the folder; docs/screenshots/site-*.png were made so)."""

from __future__ import annotations

import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.console_helpers import browser_available, chrome

pytestmark = pytest.mark.skipif(browser_available() is not None, reason=str(browser_available()))

PAGES = {  # screenshot name: (path in the site, its heading, a text the page must show)
    "site-home": ("", "Mini-Sphere", "Where to go"),
    "site-guide": (
        "get-started/first-workspace/",
        "Your first workspace",
        "admin.create_workspace",
    ),
    "site-api-reference": (
        "reference/http-api/",
        "HTTP API reference",
        "POST /v1/w/{workspace}/recall",
    ),
}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url(site):
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def driver():
    browser = chrome(width=1280, height=900)
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    chosen = os.environ.get("MINISPHERE_SITE_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("site-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("name", list(PAGES))
def test_a_page_renders_with_its_navigation_and_no_browser_error(name, site_url, driver, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as shown
    from selenium.webdriver.support.ui import WebDriverWait

    path, heading, text = PAGES[name]
    driver.get(site_url + path)
    WebDriverWait(driver, 20).until(shown.visibility_of_element_located((By.TAG_NAME, "h1")))
    assert driver.find_element(By.TAG_NAME, "h1").text.startswith(heading)
    assert text in driver.find_element(By.TAG_NAME, "article").text
    assert driver.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary a.md-nav__link")
    driver.save_screenshot(str(shots / f"{name}.png"))
    errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
