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
import sys
import urllib.parse
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
from services import ROOT, Run, free_port, http, wait_for  # noqa: E402

TICKETS, SIM = sys.argv[1], sys.argv[2]


def query(prom, expr):
    status, body = http("GET", f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise SystemExit(f"FAIL: {expr!r} does not evaluate: {answer}")
    return answer["data"]["result"]


def main(run):
    service = run.service(
        TICKETS,
        SIM,
        {
            "PROVIDER_TIMEOUT_MS": "300",
            "PROVIDER_MAX_INFLIGHT_MS": "300",
            "PROVIDER_MAX_ATTEMPTS": "2",
            "RECONCILE_EVERY_MS": "200",
            "SWEEP_EVERY_SECS": "1",
        },
    )
    # Warm-up: every series the rules divide exists before the first scrape.
    first = str(uuid.uuid4())
    assert service.create(first)[0] == 201
    assert service.create(first)[0] == 201  # a replay: the first answer again

    rules = os.path.join(run.work, "rules")
    os.makedirs(rules)
    shutil.copy(os.path.join(ROOT, "ops/prometheus/tickets.rules.yml"), rules)
    with open(os.path.join(ROOT, "ops/prometheus/tickets.alerts.yml")) as f:
        alerts = re.sub(r"for: \d+m", "for: 5s", f.read())
    with open(os.path.join(rules, "tickets.alerts.yml"), "w") as f:
        f.write(alerts)
    app = service.app.removeprefix("http://")
    with open(os.path.join(run.work, "prometheus.yml"), "w") as f:
        f.write(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}/*.yml\n"
            "scrape_configs:\n  - job_name: tickets\n"
            f"    static_configs:\n      - targets: ['{app}']\n"
        )
    prom_port = free_port()
    prom = f"http://127.0.0.1:{prom_port}"
    run.start(
        "prometheus",
        [
            "prometheus",
            f"--config.file={run.work}/prometheus.yml",
            f"--storage.tsdb.path={run.work}/data",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
    )
    wait_for("Prometheus scrapes the server", lambda: query(prom, 'up{job="tickets"} == 1'))
    wait_for("the first outcomes are scraped", lambda: query(prom, "tickets_write_outcomes_total"))

    # The load: 20 creates, each retried once (a replay); then a create
    # whose answer the provider drops after committing, with the provider
    # gone right after, so reconciliation gives up on it.
    # Twenty different tickets: the same one under twenty keys would be
    # likely duplicates, counted as such.
    for i in range(20):
        key = str(uuid.uuid4())
        title = f"Load ticket {i}"
        assert service.create(key, title)[0] == 201
        assert service.create(key, title)[0] == 201
    service.drop_next_create_answer()
    assert service.create(str(uuid.uuid4()), "Lost on the way back")[0] == 202, "unknown"
    service.outage(30000)

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


with Run("prometheus-live") as run:
    main(run)
