"""A person's view: Datasette on 127.0.0.1, headless Chromium types a question into /-/context_for.

Needs Debian's chromium and chromium-driver (.ci/run installs them) and selenium
(the test extra); skips only where those cannot be had. The screenshot is kept
in build/test-artifacts/.
"""

import shutil

import pytest

from .conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER), reason="no chromium + chromedriver on this machine (apt-get install chromium chromium-driver)"
)
ARTIFACTS = ROOT / "build" / "test-artifacts"


@pytest.fixture
def browser(tmp_path):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1300,1800", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_ask_a_question_in_the_page(datasette_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(datasette_server + "-/context_for")
    box = browser.find_element(By.ID, "okf-q")
    box.send_keys("Who does the Tinker work for?")
    browser.find_element(By.ID, "okf-ask").click()
    WebDriverWait(browser, 60).until(EC.presence_of_element_located((By.CSS_SELECTOR, "#okf-nodes li")))
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#okf-nodes li > a")]
    assert titles[0] == "Teodor Vask"
    assert "The Sable Accord" in titles
    circles = browser.find_elements(By.CSS_SELECTOR, "svg.okf-neighbourhood circle")
    assert len(circles) == len(titles)
    assert "Teodor Vask works_for The Sable Accord" in browser.find_element(By.ID, "okf-context").text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "context_for.png"))
    assert (ARTIFACTS / "context_for.png").stat().st_size > 10_000
    # the link to the row page works
    browser.find_element(By.LINK_TEXT, "Teodor Vask").click()
    WebDriverWait(browser, 30).until(EC.title_contains("concepts"))
    assert "campaign/people/teodor-vask" in browser.page_source
