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
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.path.join(ROOT, "target", "console-browser")
TICKETS, SIM = sys.argv[1], sys.argv[2]
started = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name, argv, env=None):
    log = open(os.path.join(WORK, f"{name}.log"), "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=WORK)
    started.append(proc)
    return proc


def http(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, str(e).encode()


def wait_for(what, check, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.3)
    raise SystemExit(f"FAIL: {what} within {seconds} s")


def shoot(browser, name):
    path = os.path.join(WORK, f"console-{name}.png")
    browser.save_screenshot(path)
    if os.environ.get("TICKETS_WRITE_SCREENSHOTS") == "1":
        shutil.copy(path, os.path.join(ROOT, "docs", "operations", f"console-{name}.png"))


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    sim_port, app_port, console_port = free_port(), free_port(), free_port()
    sim = f"http://127.0.0.1:{sim_port}"
    app = f"http://127.0.0.1:{app_port}"
    console = f"http://127.0.0.1:{console_port}"
    start("provider-sim", [SIM, "--listen", f"127.0.0.1:{sim_port}", "--keys", "ignore"])
    wait_for("the simulator answers", lambda: http("GET", f"{sim}/_sim/healthz")[0] == 200)
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"sqlite:{WORK}/tickets.db",
        LISTEN=f"127.0.0.1:{app_port}",
        ADMIN_LISTEN=f"127.0.0.1:{console_port}",
        TICKET_BACKEND="remote",
        PROVIDER_URL=sim,
        PROVIDER_TIMEOUT_MS="300",
        PROVIDER_MAX_INFLIGHT_MS="300",
        PROVIDER_MAX_ATTEMPTS="2",
        RECONCILE_EVERY_MS="100",
        SWEEP_EVERY_SECS="1",
    )
    subprocess.run([TICKETS, "tenant", "create", "acme"], env=env, check=True, capture_output=True)
    token = subprocess.run(
        [TICKETS, "token", "issue", "acme"], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    start("tickets", [TICKETS, "serve"], env=env)
    wait_for("the server is ready", lambda: http("GET", f"{app}/readyz")[0] == 200)
    auth = {"Authorization": f"Bearer {token}"}

    def create(key, title):
        headers = dict(auth, **{"Idempotency-Key": key})
        return http("POST", f"{app}/v1/tickets", {"project_id": "ops", "title": title}, headers)

    for _ in range(5):
        key = str(uuid.uuid4())
        assert create(key, "Disk full on db-1")[0] == 201
        assert create(key, "Disk full on db-1")[0] == 201  # a replay
    assert http("POST", f"{sim}/_sim/faults", {"on": "create", "fault": {"kind": "commit_then_drop"}})[0] == 201
    lost = str(uuid.uuid4())
    status, body = create(lost, "Login page returns 500")
    assert status == 202, (status, body)
    assert http("POST", f"{sim}/_sim/outage", {"ms": 4000})[0] == 202
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
        shoot(browser, "overview")

        browser.get(f"{console}/effects")
        row = browser.find_element(By.XPATH, f"//tr[.//a[contains(., '{lost}')]]")
        reference = row.find_element(By.XPATH, ".//span[starts-with(., 'ref ')]").text.removeprefix("ref ")
        _, found = http("GET", f"{sim}/api/tickets?external_ref={reference}")
        tickets = json.loads(found)["tickets"]
        assert len(tickets) == 1, found
        made_as = tickets[0]["id"]
        shoot(browser, "effects")

        form = row.find_element(By.XPATH, "following-sibling::tr[1]//form[@class='settle']")
        form.find_element(By.NAME, "reference").send_keys(made_as)
        form.find_element(By.NAME, "by").send_keys("ana")
        form.find_element(By.NAME, "reason").send_keys(f"found {made_as} in the tracker")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for("the settle answers", lambda: "Settled" in browser.page_source or "Not settled" in browser.page_source)
        assert "Settled" in browser.page_source and "Not settled" not in browser.page_source, browser.page_source
        shoot(browser, "settled")

        browser.get(f"{console}/lookup?tenant=acme&action=create_ticket&key={lost}")
        assert "Settled by hand" in browser.page_source
        shoot(browser, "lookup")

        browser.get(f"{console}/lookup?tenant=Not%20A%20Slug&action=x&key=")
        assert "the actions are" in browser.page_source
    finally:
        browser.quit()

    # The caller's retry answers the settled ticket; the provider holds one.
    status, body = create(lost, "Login page returns 500")
    assert status == 201, (status, body)
    assert json.loads(body)["provider_ticket_id"] == made_as, body
    _, found = http("GET", f"{sim}/api/tickets?external_ref={reference}")
    assert len(json.loads(found)["tickets"]) == 1, found
    print(f"settled {lost} as {made_as} through the browser; the provider holds it once")
    print("OK")


try:
    main()
finally:
    for proc in reversed(started):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
