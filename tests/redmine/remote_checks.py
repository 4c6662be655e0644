"""The remote backend against a real Redmine, with the simulator's faults.

Starts a Redmine (tests/redmine/redmine.py: Debian's package, a fresh
instance under target/), the fault proxy in front of it (`provider-sim
--redmine-upstream`), and the service with `PROVIDER_KIND=redmine` pointed
at the proxy, acting as a non-administrator (the kit's `developer`, so
Redmine's real workflow applies). Then:

1. start-up refusals: a wrong API key, a reference field that does not
   exist, each refused naming its setting;
2. the double-fire driver (the fault-injection server, restarted by a
   supervisor when a check crashes it): every check, checks 10 to 17 for
   every action with the proxy's faults (5xx before Redmine, Redmine
   commits and the answer is dropped or turned into a 500, a hang past the
   timeout delivered late, an outage, a rejection) and checks 8, 17 and 23
   crashing the server between the write-ahead record and the dispatch and
   right after it. The ground truth is Redmine's: issues by subject,
   journals by the adapter's marker line;
3. kill -9 chaos: clients create tickets and comment on each, every write
   under its own key and retried with it until a definite answer, while
   the server (`tickets`) is SIGKILLed and restarted; then Redmine must
   hold exactly one issue per create key and one comment journal per
   comment key (0 extra, 0 missing), each the one acknowledged.

    cargo build --workspace --bin tickets --bin tickets-fault-injection \\
        --bin provider-sim --bin double-fire
    python3 tests/redmine/remote_checks.py [--only N] [--action A] \\
        [--kills 5] [--clients 6] [--keys-per-client 10] [--skip-driver] [--skip-chaos] \\
        [--fresh-key-retries]   # sabotage: the chaos must then find extra issues

Stops what it started, by pid. Files under target/redmine-checks/.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
sys.path.insert(0, HERE)
from checks import check, finish  # noqa: E402
from redmine import Redmine  # noqa: E402
from services import free_port  # noqa: E402

BIN = os.path.join(ROOT, "target", "debug")
WORK = os.path.join(ROOT, "target", "redmine-checks")

# Redmine answers a create in tens of milliseconds on an idle machine and
# serializes requests (tests/redmine/README.md): 1.5 s per call leaves
# room for a busy CI machine, the hang outlasts it, and a search proves
# absence once the hang could have landed.
PROVIDER_TIMEOUT_MS = 1500
HANG_MS = 2500
MAX_INFLIGHT_MS = 3000


def say(message):
    print(f"-- {message}", flush=True)


def tickets(env, *args):
    out = subprocess.run([os.path.join(BIN, "tickets"), *args], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: tickets {' '.join(args)}: {out.stderr}")
    return out.stdout


def token(env, tenant):
    tickets(env, "tenant", "create", tenant)
    for word in tickets(env, "token", "issue", tenant).split():
        if word.startswith("tkt_"):
            return word
    raise SystemExit(f"FAIL: no token in the output of tickets token issue {tenant}")


def ready(url, timeout=60.0, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as r:
                if r.status == 200:
                    return True
        except (OSError, urllib.error.URLError):
            pass
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


class Proxy:
    """`provider-sim --redmine-upstream`, on a port the kernel picks."""

    def __init__(self, upstream):
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "provider-sim"), "--listen", "127.0.0.1:0",
             "--redmine-upstream", upstream],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            raise SystemExit(f"FAIL: the fault proxy did not start: {line!r}")
        self.url = line.split("listening on ")[1].split()[0]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Server:
    """The service on one port; with `supervise`, started again whenever it
    dies until `stop` (a check that crashes it on purpose then finds it
    back, as a service manager would bring it back)."""

    def __init__(self, binary, env, log, supervise=False):
        self.binary, self.env, self.log = binary, env, log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stopping = False
        self.starts = 0
        self.proc = None
        self.lock = threading.Lock()
        self.start()
        if not ready(self.url, proc=self.proc):
            raise SystemExit(f"FAIL: the service did not get ready; see {log}")
        if supervise:
            threading.Thread(target=self._supervise, daemon=True).start()

    def start(self):
        with self.lock:
            self.starts += 1
            self.proc = subprocess.Popen(
                [os.path.join(BIN, self.binary), "serve", "--listen", f"127.0.0.1:{self.port}"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))

    def _supervise(self):
        while not self.stopping:
            proc = self.proc
            proc.wait()
            if not self.stopping:
                self.start()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.stopping = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def service_env(rm, provider_url, database):
    return dict(
        os.environ,
        DATABASE_URL=f"sqlite:{database}",
        TICKET_BACKEND="remote",
        PROVIDER_KIND="redmine",
        PROVIDER_URL=provider_url,
        REDMINE_API_KEY=rm.developer["api_key"],
        REDMINE_PROJECT=rm.project_identifier,
        # The kit's field is for all projects: a non-administrator names it
        # by id.
        REDMINE_REFERENCE_FIELD=str(rm.custom_field_id),
        PROVIDER_TIMEOUT_MS=str(PROVIDER_TIMEOUT_MS),
        PROVIDER_MAX_INFLIGHT_MS=str(MAX_INFLIGHT_MS),
        RECONCILE_EVERY_MS="200",
    )


def start_refusals(rm, work):
    """A wrong key, a missing field: refused at start, naming the setting."""
    database = os.path.join(work, "refusals.db")
    env = service_env(rm, rm.url, database)
    tickets(env, "tenant", "list")  # makes the database
    cases = [
        ("a wrong API key", dict(REDMINE_API_KEY="0" * 40), "REDMINE_API_KEY"),
        ("a reference field that does not exist",
         dict(REDMINE_API_KEY=rm.api_key, REDMINE_REFERENCE_FIELD="No such field"),
         "REDMINE_REFERENCE_FIELD"),
        ("a status Redmine does not have",
         dict(REDMINE_STATUSES="open=New,in_progress=Doing,resolved=Resolved,closed=Closed"),
         "REDMINE_STATUSES"),
    ]
    for name, change, setting in cases:
        run = subprocess.run(
            [os.path.join(BIN, "tickets"), "serve", "--listen", f"127.0.0.1:{free_port()}"],
            env=dict(env, **change), capture_output=True, text=True, timeout=60)
        said = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
        check(f"start refused with {name}, naming {setting}",
              run.returncode != 0 and setting in said, f"exit {run.returncode}: {said}")


def driver(rm, work, args):
    """The double-fire driver's checks, Redmine behind the fault proxy."""
    proxy = Proxy(rm.url)
    env = service_env(rm, proxy.url, os.path.join(work, "driver.db"))
    acme, globex = token(env, "acme"), token(env, "globex")
    server = Server("tickets-fault-injection", env, os.path.join(work, "driver.log"),
                    supervise=True)
    try:
        say(f"the double-fire driver against {server.url} (Redmine {rm.url} behind {proxy.url})")
        command = [
            os.path.join(BIN, "double-fire"), "--url", server.url, "--token", acme,
            "--other-token", globex, "--restart-cmd", "true",
            "--provider-url", proxy.url, "--redmine-url", rm.url,
            "--redmine-api-key", rm.api_key, "--redmine-project", rm.project_identifier,
            "--provider-hang-ms", str(HANG_MS),
            "--settle-within-secs", str(2 * MAX_INFLIGHT_MS // 1000 + 20),
            "--json", os.path.join(work, "driver-report.json"),
        ]
        if args.only:
            command += ["--only", str(args.only)]
        if args.action:
            command += ["--action", args.action]
        started = time.time()
        run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        elapsed = time.time() - started
        with open(os.path.join(work, "driver.out"), "w") as f:
            f.write(run.stdout + run.stderr)
        with open(os.path.join(work, "driver-report.json")) as f:
            report = json.load(f)
        for c in report["checks"]:
            c["verdict"] = c["verdict"].lower()
        for c in report["checks"]:
            if c["verdict"] == "fail":
                print(f"   {c['number']} {c['name']}: {c['detail']}")
        by = {}
        for c in report["checks"]:
            by[c["verdict"]] = by.get(c["verdict"], 0) + 1
        remote = [c for c in report["checks"] if 10 <= c["number"] <= 17]
        say(f"driver: {by} in {elapsed:.0f} s; checks 10-17: {len(remote)} "
            f"({sum(c['verdict'] == 'pass' for c in remote)} passed); "
            f"the server was started {server.starts} times")
        check("double-fire against Redmine: no check failed", run.returncode == 0 and not by.get("fail"),
              f"exit {run.returncode}; see {work}/driver.out")
        if not args.only and not args.action:
            actions = {c["action"] for c in remote if c["verdict"] == "pass"}
            check("checks 10 to 17 passed for create, update, transition and comment",
                  {"create_ticket", "update_ticket", "transition_ticket", "add_comment"} <= actions,
                  f"passed for: {sorted(actions)}")
            # The label actions have nothing like them in Redmine: refused
            # (check 10), so their crash checks say so and are skipped.
            crashes = [c for c in report["checks"] if c["number"] in (8, 17, 23)
                       and c["action"] not in ("add_label", "remove_label")]
            check(f"checks 8, 17 and 23 (crashes around the dispatch): {len(crashes)} ran and passed",
                  len(crashes) == 16 and all(c["verdict"] == "pass" for c in crashes),
                  str([(c["name"], c["verdict"]) for c in crashes]))
            skipped = sorted({c["number"] for c in report["checks"] if c["verdict"] == "skip"})
            say(f"skipped, each saying why: checks {skipped}")
    finally:
        server.stop()
        proxy.stop()


def post(url, token_, path, body, key, timeout):
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token_}", "Content-Type": "application/json",
                 "Idempotency-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None
    except (OSError, urllib.error.URLError):
        return None, None


def chaos(rm, work, args):
    """Creates under kill -9: exactly one issue per key in Redmine."""
    env = service_env(rm, rm.url, os.path.join(work, "chaos.db"))
    acme = token(env, "acme")
    server = Server("tickets", env, os.path.join(work, "chaos.log"))
    run_id = uuid.uuid4().hex[:8]
    acked = {}  # key -> (title, provider_ticket_id)
    commented = {}  # key -> provider_comment_id
    lock = threading.Lock()
    progress = [0]
    total = args.clients * args.keys_per_client
    retries = [0]

    def client(n):
        for i in range(args.keys_per_client):
            key = f"chaos-{run_id}-{n}-{i}"
            title = f"chaos {run_id} {n}-{i}"
            deadline = time.time() + 180
            attempt = 0
            while time.time() < deadline:
                attempt += 1
                # Sabotage: a retry under a fresh key, as a client without
                # idempotency would send it.
                sent = f"{key}-{attempt}" if args.fresh_key_retries else key
                status, body = post(server.url, acme, "/v1/tickets",
                                    {"project_id": "ops", "title": title}, sent, timeout=5)
                if status in (200, 201) and body and body.get("provider_ticket_id"):
                    with lock:
                        acked[key] = (title, body["provider_ticket_id"])
                    break
                with lock:
                    retries[0] += 1
                time.sleep(0.2)
            else:
                continue
            # One comment on it, under a key of its own: a journal in
            # Redmine, found again by its marker after a kill.
            ticket = body["id"]
            attempt = 0
            while time.time() < deadline:
                attempt += 1
                sent = f"{key}-c-{attempt}" if args.fresh_key_retries else f"{key}-c"
                status, answer = post(server.url, acme, f"/v1/tickets/{ticket}/comments",
                                      {"body": f"comment on {title}"}, sent, timeout=5)
                if status in (200, 201) and answer and answer.get("provider_comment_id"):
                    with lock:
                        commented[key] = answer["provider_comment_id"]
                        progress[0] += 1
                    break
                with lock:
                    retries[0] += 1
                time.sleep(0.2)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    started = time.time()
    for t in threads:
        t.start()
    rng = random.Random(args.seed)
    kills = 0
    try:
        for k in range(args.kills):
            # Kill when the clients have done about (k+1)/(kills+1) of the work.
            goal = total * (k + 1) // (args.kills + 1)
            while progress[0] < goal and any(t.is_alive() for t in threads):
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.3))
            server.kill9()
            kills += 1
            time.sleep(rng.uniform(0.1, 0.5))
            server.start()
            ready(server.url, proc=server.proc)
        for t in threads:
            t.join()
        elapsed = time.time() - started
        # Redmine itself: issues whose subject carries this run's id.
        per_title = {}
        offset = 0
        while True:
            query = urllib.parse.urlencode([
                ("project_id", rm.project_identifier), ("set_filter", "1"),
                ("f[]", "subject"), ("op[subject]", "~"), ("v[subject][]", f"chaos {run_id} "),
                ("f[]", "status_id"), ("op[status_id]", "*"), ("sort", "id"),
                ("limit", "100"), ("offset", str(offset))])
            page = rm.api("GET", f"/issues.json?{query}").json
            for issue in page["issues"]:
                per_title.setdefault(issue["subject"], []).append(str(issue["id"]))
            offset += len(page["issues"])
            if not page["issues"] or offset >= page["total_count"]:
                break
        # Each acknowledged issue's comment journals (by the adapter's
        # marker line).
        comment_journals = {}
        for key, (title, pid) in acked.items():
            issue = rm.api("GET", f"/issues/{pid}.json?include=journals").json["issue"]
            comment_journals[key] = [
                str(j["id"]) for j in issue["journals"]
                if (j.get("notes") or "").rstrip().splitlines()[-1:] != []
                and (j.get("notes") or "").rstrip().splitlines()[-1].startswith("[tickets comment ")]
        extra_comments = sum(max(0, len(ids) - 1) for ids in comment_journals.values())
        missing_comments = [k for k, ids in comment_journals.items() if not ids]
        wrong_comments = [k for k, cid in commented.items() if comment_journals.get(k, [None])[0] != cid]
        titles = {f"chaos {run_id} {n}-{i}" for n in range(args.clients)
                  for i in range(args.keys_per_client)}
        extra = sum(max(0, len(ids) - 1) for ids in per_title.values())
        missing = sorted(t for t in titles if t not in per_title)
        mismatched = [k for k, (title, pid) in acked.items() if per_title.get(title, [None])[0] != pid]
        say(f"chaos: {len(acked)}/{total} keys acknowledged in {elapsed:.0f} s, {kills} kills, "
            f"{retries[0]} retries; Redmine holds {sum(map(len, per_title.values()))} issues: "
            f"{extra} extra, {len(missing)} missing, {len(mismatched)} acknowledged with another id")
        check(f"kill -9 chaos against Redmine ({kills} kills): every key acknowledged",
              len(acked) == total, f"{total - len(acked)} never answered")
        check("kill -9 chaos: 0 extra and 0 missing issues in Redmine",
              extra == 0 and not missing, f"extra {extra}, missing {missing[:5]}")
        check("kill -9 chaos: every acknowledged ticket is the issue Redmine holds",
              not mismatched, str(mismatched[:5]))
        say(f"chaos comments: {len(commented)}/{total} acknowledged; Redmine holds "
            f"{sum(map(len, comment_journals.values()))} comment journals: {extra_comments} extra, "
            f"{len(missing_comments)} missing, {len(wrong_comments)} acknowledged with another id")
        check("kill -9 chaos: every comment acknowledged, exactly one journal each in Redmine, "
              "the one acknowledged",
              len(commented) == total and extra_comments == 0 and not missing_comments
              and not wrong_comments,
              f"acknowledged {len(commented)}, extra {extra_comments}, missing {missing_comments[:5]}, "
              f"other id {wrong_comments[:5]}")
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", type=int)
    parser.add_argument("--action")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--keys-per-client", type=int, default=10)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--skip-driver", action="store_true")
    parser.add_argument("--skip-chaos", action="store_true")
    parser.add_argument("--fresh-key-retries", action="store_true",
                        help="sabotage: chaos retries under a fresh key; the chaos must then FAIL")
    args = parser.parse_args()
    for binary in ("tickets", "tickets-fault-injection", "provider-sim", "double-fire"):
        if not os.path.exists(os.path.join(BIN, binary)):
            raise SystemExit(f"FAIL: {BIN}/{binary} is missing; build it first (see the docstring)")
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    started = time.time()
    # Its files (logs included) stay under target/redmine-checks/redmine until the next run.
    with Redmine(run_dir=os.path.join(WORK, "redmine")) as rm:
        say(f"Redmine {rm.url} up in {time.time() - started:.1f} s")
        start_refusals(rm, WORK)
        if not args.skip_driver:
            driver(rm, WORK, args)
        if not args.skip_chaos:
            chaos(rm, WORK, args)
    say(f"all in {time.time() - started:.0f} s")
    finish()


if __name__ == "__main__":
    main()
