"""A real Prometheus scraping a real `tickets` server under a short
scripted load with provider faults: the recording rules return the values
the load implies, the unresolved-effects alert fires (the alert file's
`for:` shortened in a copy), and every expression of the Grafana dashboard
evaluates without error. Grafana itself is not packaged here: only its
queries are checked.

Run by tests/prometheus/run.sh, which builds the binaries and passes
their paths; everything lives under target/prometheus-live/ and every
process started here is stopped by pid.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.path.join(ROOT, "target", "prometheus-live")
TICKETS, SIM = sys.argv[1], sys.argv[2]
started = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name, argv, env=None):
    log = open(os.path.join(WORK, f"{name}.log"), "w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=WORK)
    started.append((name, proc))
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


def wait_for(what, check, seconds=60):
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.5)
    raise SystemExit(f"FAIL: {what} within {seconds} s (last: {last!r})")


def query(prom, expr):
    status, body = http("GET", f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise SystemExit(f"FAIL: {expr!r} does not evaluate: {answer}")
    return answer["data"]["result"]


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    sim_port, app_port, prom_port = free_port(), free_port(), free_port()
    sim = f"http://127.0.0.1:{sim_port}"
    app = f"http://127.0.0.1:{app_port}"
    prom = f"http://127.0.0.1:{prom_port}"
    start("provider-sim", [SIM, "--listen", f"127.0.0.1:{sim_port}", "--keys", "ignore"])
    wait_for("the simulator answers", lambda: http("GET", f"{sim}/_sim/healthz")[0] == 200)

    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"sqlite:{WORK}/tickets.db",
        LISTEN=f"127.0.0.1:{app_port}",
        TICKET_BACKEND="remote",
        PROVIDER_URL=sim,
        PROVIDER_TIMEOUT_MS="300",
        PROVIDER_MAX_INFLIGHT_MS="300",
        PROVIDER_MAX_ATTEMPTS="2",
        RECONCILE_EVERY_MS="200",
        SWEEP_EVERY_SECS="1",
    )
    subprocess.run([TICKETS, "tenant", "create", "acme"], env=env, check=True, capture_output=True)
    token = subprocess.run(
        [TICKETS, "token", "issue", "acme"], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    start("tickets", [TICKETS, "serve"], env=env)
    wait_for("the server is ready", lambda: http("GET", f"{app}/readyz")[0] == 200)
    auth = {"Authorization": f"Bearer {token}"}

    def create(key, title="Disk full on db-1"):
        headers = dict(auth, **{"Idempotency-Key": key})
        return http("POST", f"{app}/v1/tickets", {"project_id": "ops", "title": title}, headers)[0]

    # Warm-up: every series the rules divide exists before the first scrape.
    first = str(uuid.uuid4())
    assert create(first) == 201
    assert create(first) == 201  # a replay: the first answer again

    rules = os.path.join(WORK, "rules")
    os.makedirs(rules)
    shutil.copy(os.path.join(ROOT, "ops/prometheus/tickets.rules.yml"), rules)
    with open(os.path.join(ROOT, "ops/prometheus/tickets.alerts.yml")) as f:
        alerts = re.sub(r"for: \d+m", "for: 5s", f.read())
    with open(os.path.join(rules, "tickets.alerts.yml"), "w") as f:
        f.write(alerts)
    with open(os.path.join(WORK, "prometheus.yml"), "w") as f:
        f.write(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}/*.yml\n"
            "scrape_configs:\n  - job_name: tickets\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{app_port}']\n"
        )
    start(
        "prometheus",
        [
            "prometheus",
            f"--config.file={WORK}/prometheus.yml",
            f"--storage.tsdb.path={WORK}/data",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
    )
    wait_for(
        "Prometheus scrapes the server",
        lambda: query(prom, 'up{job="tickets"} == 1'),
    )
    wait_for(
        "the first outcomes are scraped",
        lambda: query(prom, "tickets_write_outcomes_total"),
    )

    # The load: 20 creates, each retried once (a replay); then a create
    # whose answer the provider drops after committing, with the provider
    # gone right after, so reconciliation gives up on it.
    for _ in range(20):
        key = str(uuid.uuid4())
        assert create(key) == 201
        assert create(key) == 201
    status, _ = http(
        "POST", f"{sim}/_sim/faults", {"on": "create", "fault": {"kind": "commit_then_drop"}}
    )
    assert status == 201, status
    lost = str(uuid.uuid4())
    assert create(lost, "Lost on the way back") == 202, "unknown"
    assert http("POST", f"{sim}/_sim/outage", {"ms": 30000})[0] == 202

    # Replays among answered creates since the warm-up: 20 of 40.
    def retry_ratio():
        result = query(prom, 'door_action:tickets_retry:ratio_rate5m{door="rest",action="create_ticket"}')
        return result and abs(float(result[0]["value"][1]) - 0.5) < 0.02 and result

    print("retry ratio:", wait_for("the retry ratio is 0.5", retry_ratio)[0]["value"][1])
    attempts = query(prom, 'door_action:tickets_write_attempts:rate5m{door="rest"}')
    assert attempts and float(attempts[0]["value"][1]) > 0, attempts
    for expr in ("door_action:tickets_conflict:ratio_rate5m", "door_action:tickets_error:ratio_rate5m"):
        result = query(prom, expr + '{door="rest"}')
        assert result and float(result[0]["value"][1]) == 0.0, (expr, result)

    # The sweep runs every second here: its gauge is recent.
    fresh = wait_for(
        "the sweep's last success is recent",
        lambda: query(prom, "time() - max(tickets_sweep_last_success_seconds) < 60"),
    )
    print("seconds since the last sweep:", fresh[0]["value"][1])

    def firing():
        _, body = http("GET", f"{prom}/api/v1/alerts")
        alerts = json.loads(body)["data"]["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "TicketsEffectsUnresolved" and a["state"] == "firing"]

    alert = wait_for("TicketsEffectsUnresolved fires", firing, seconds=90)
    print("firing:", alert[0]["annotations"]["summary"])

    with open(os.path.join(ROOT, "ops/grafana/tickets.json")) as f:
        dashboard = json.load(f)
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    for expr in exprs:
        query(prom, expr)
    print(f"every dashboard expression evaluates ({len(exprs)})")
    print("OK")


try:
    main()
finally:
    for name, proc in reversed(started):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
