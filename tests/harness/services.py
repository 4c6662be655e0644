"""What the scripted end-to-end checks share (tests/prometheus/live.py,
tests/console/browser.py): free loopback ports, processes started under
target/ and stopped by pid, HTTP with the standard library, waiting for a
condition, and a real `tickets` server on the remote backend over the
provider simulator with a tenant and its token.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, headers=None):
    """(status, body bytes); status 0 when nothing answered."""
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
    """`check()`'s first truthy value; fails the run after `seconds`."""
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.3)
    raise SystemExit(f"FAIL: {what} within {seconds} s (last: {last!r})")


class Run:
    """One check's processes and files (under target/NAME/, made fresh),
    every process stopped by pid at the end (use as a context manager)."""

    def __init__(self, name):
        self.work = os.path.join(ROOT, "target", name)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.started = []

    def __enter__(self):
        return self

    def __exit__(self, *_):
        for proc in reversed(self.started):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.work, f"{name}.log"), "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.work)
        self.started.append(proc)
        return proc

    def service(self, tickets, sim, settings):
        """The simulator (ignoring keys) and a `tickets` server on the
        remote backend over it, with `settings` as environment, and a
        tenant `acme` with a token."""
        sim_url = f"http://127.0.0.1:{free_port()}"
        self.start("provider-sim", [sim, "--listen", sim_url.removeprefix("http://"), "--keys", "ignore"])
        wait_for("the simulator answers", lambda: http("GET", f"{sim_url}/_sim/healthz")[0] == 200)
        app_url = f"http://127.0.0.1:{free_port()}"
        env = dict(os.environ)
        env.update(
            DATABASE_URL=f"sqlite:{self.work}/tickets.db",
            LISTEN=app_url.removeprefix("http://"),
            TICKET_BACKEND="remote",
            PROVIDER_URL=sim_url,
        )
        env.update(settings)
        subprocess.run([tickets, "tenant", "create", "acme"], env=env, check=True, capture_output=True)
        token = subprocess.run(
            [tickets, "token", "issue", "acme"], env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        self.start("tickets", [tickets, "serve"], env=env)
        wait_for("the server is ready", lambda: http("GET", f"{app_url}/readyz")[0] == 200)
        return Service(sim_url, app_url, token)


class Service:
    """A running server and its simulator."""

    def __init__(self, sim, app, token):
        self.sim, self.app, self.token = sim, app, token

    def create(self, key, title="Disk full on db-1"):
        headers = {"Authorization": f"Bearer {self.token}", "Idempotency-Key": key}
        body = {"project_id": "ops", "title": title}
        return http("POST", f"{self.app}/v1/tickets", body, headers)

    def drop_next_create_answer(self):
        """The provider commits the next create, then drops the connection."""
        rule = {"on": "create", "fault": {"kind": "commit_then_drop"}}
        assert http("POST", f"{self.sim}/_sim/faults", rule)[0] == 201

    def outage(self, ms):
        """The provider refuses every connection for `ms`."""
        assert http("POST", f"{self.sim}/_sim/outage", {"ms": ms})[0] == 202
