"""The operators' console driven by a real browser (headless Chromium
through chromium-driver and Selenium): a create whose answer the provider
dropped, with the provider gone right after, is given up on by
reconciliation; it shows in the console; the operator settles it with the
form; the caller's retry then answers the settled ticket, and the
provider simulator holds exactly one.

Screenshots at 1280x800 go to target/console-browser/; with
TICKETS_WRITE_SCREENSHOTS=1 also to docs/operations/ (the README shows
those). Run by tests/console/run.sh, which builds the binaries and passes
their paths; every process started here is stopped by pid.
"""

import json
import os
import shutil
import sys
import time
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
from services import ROOT, Run, free_port, http, wait_for  # noqa: E402

TICKETS, SIM = sys.argv[1], sys.argv[2]


def shoot(run, browser, name):
    path = os.path.join(run.work, f"console-{name}.png")
    browser.save_screenshot(path)
    if os.environ.get("TICKETS_WRITE_SCREENSHOTS") == "1":
        shutil.copy(path, os.path.join(ROOT, "docs", "operations", f"console-{name}.png"))


def main(run):
    console_port = free_port()
    console = f"http://127.0.0.1:{console_port}"
    service = run.service(
        TICKETS,
        SIM,
        {
            "ADMIN_LISTEN": f"127.0.0.1:{console_port}",
            "PROVIDER_TIMEOUT_MS": "300",
            "PROVIDER_MAX_INFLIGHT_MS": "300",
            "PROVIDER_MAX_ATTEMPTS": "2",
            "RECONCILE_EVERY_MS": "100",
            "SWEEP_EVERY_SECS": "1",
        },
    )
    sim = service.sim
    for _ in range(5):
        key = str(uuid.uuid4())
        assert service.create(key)[0] == 201
        assert service.create(key)[0] == 201  # a replay
    service.drop_next_create_answer()
    lost = str(uuid.uuid4())
    status, body = service.create(lost, "Login page returns 500")
    assert status == 202, (status, body)
    service.outage(4000)
    wait_for(
        "reconciliation gives up on it",
        lambda: b"tickets_effects_unresolved{otel_scope_name=\"tickets\"} 1"
        in http("GET", f"{console}/metrics")[1],
        seconds=60,
    )
    wait_for("the simulator is back", lambda: http("GET", f"{sim}/_sim/healthz")[0] == 200)

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        browser.get(f"{console}/")
        assert "Overview" in browser.title, browser.title
        assert "1" in browser.find_element(By.CSS_SELECTOR, ".card.bad .n").text
        assert "ambiguous" in browser.page_source, "the lost answer among the provider's errors"

        browser.get(f"{console}/effects")
        row = browser.find_element(By.XPATH, f"//tr[.//a[contains(., '{lost}')]]")
        reference = row.find_element(By.XPATH, ".//span[starts-with(., 'ref ')]").text.removeprefix("ref ")
        _, found = http("GET", f"{sim}/api/tickets?external_ref={reference}")
        tickets = json.loads(found)["tickets"]
        assert len(tickets) == 1, found
        made_as = tickets[0]["id"]
        shoot(run, browser, "effects")

        form = row.find_element(By.XPATH, "following-sibling::tr[1]//form[@class='settle']")
        form.find_element(By.NAME, "reference").send_keys(made_as)
        form.find_element(By.NAME, "by").send_keys("ana")
        form.find_element(By.NAME, "reason").send_keys(f"found {made_as} in the tracker")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for("the settle answers", lambda: "Settled" in browser.page_source or "Not settled" in browser.page_source)
        assert "Settled" in browser.page_source and "Not settled" not in browser.page_source, browser.page_source
        shoot(run, browser, "settled")

        browser.get(f"{console}/lookup?tenant=acme&action=create_ticket&key={lost}")
        assert "Settled by hand" in browser.page_source
        shoot(run, browser, "lookup")

        browser.get(f"{console}/lookup?tenant=Not%20A%20Slug&action=x&key=")
        assert "the actions are" in browser.page_source

        # A few bursts of callers, one per 10-second step of the overview's
        # history, until its sparklines have lines to draw.
        def sparklines():
            for _ in range(4):
                key = str(uuid.uuid4())
                service.create(key, "Disk full on db-2")
                service.create(key, "Disk full on db-2")
            time.sleep(4)
            browser.get(f"{console}/")
            return browser.page_source.count("<polyline") == 6

        wait_for("the overview draws its sparklines", sparklines, seconds=90)
        shoot(run, browser, "overview")
    finally:
        browser.quit()

    # The caller's retry answers the settled ticket; the provider holds one.
    status, body = service.create(lost, "Login page returns 500")
    assert status == 201, (status, body)
    assert json.loads(body)["provider_ticket_id"] == made_as, body
    _, found = http("GET", f"{sim}/api/tickets?external_ref={reference}")
    assert len(json.loads(found)["tickets"]) == 1, found
    print(f"settled {lost} as {made_as} through the browser; the provider holds it once")
    print("OK")


with Run("console-browser") as run:
    main(run)
