"""The failover chaos test: the service rides through PostgreSQL failovers.

One `tickets serve`, never restarted, on a Patroni cluster through
HAProxy's primary port (tests/ha/cluster.py), or with `--pgbouncer`
through pgbouncer in transaction mode in front of it
(`DATABASE_POOLER=transaction`). CLIENTS clients create tickets, edit
them and comment on them, each write under its own Idempotency-Key,
while the primary is killed (kill -9 of Patroni and the postmaster) KILLS
times, switched over cleanly SWITCHOVERS times and, ETCD_OUTAGES times,
loses etcd for 1.5 × Patroni's ttl while the primary lives (the kit runs
Patroni with `failsafe_mode: true`, so writes must go on: such an outage
fails the test if the writes pause longer than 2 s). A write that gets no
final answer (a dropped connection, a timeout, a 503, a 409 in progress)
is sent again with the same key until it gets one. Then, on the final
primary: every acknowledged write is there (0 lost), no intent made two
effects (0 duplicates: each intent's text is unique, so two rows with it
would be a duplicate; an edit is counted by its key's history entries),
no key is left unsettled, and the service process
is the one that started. Besides, `tickets` pointed at the replica port
refuses to start, naming the problem. Every status the service answered is counted;
a `500` fails the test (the contract promises `503` with `Retry-After`).
The longest pause in acknowledged writes after each event is reported.

    cargo build --workspace --bin tickets
    python3 tests/ha/failover.py [--kills 2] [--switchovers 1] [--etcd-outages 0] [--clients 6]
                                 [--pgbouncer] [--json OUT]

Needs root (apt-get, and the cluster runs as `postgres`). About 2 minutes
for the defaults on 2 cores.
"""

import argparse
import collections
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from cluster import Cluster, free_port, install, psql, say  # noqa: E402

# Answers that settle a write: it happened (or was refused, which is final).
FINAL = {200, 201, 400, 404, 409, 412, 422}


class Service:
    """One `tickets serve` on DATABASE_URL; stopped by pid."""

    def __init__(self, binary, database_url, work, pooler="none"):
        self.binary, self.database_url, self.pooler = binary, database_url, pooler
        self.port = free_port()
        self.log = open(os.path.join(work, "tickets.log"), "w")
        env = dict(
            os.environ,
            DATABASE_URL=database_url,
            DATABASE_POOLER=pooler,
            LISTEN=f"127.0.0.1:{self.port}",
            LOG_FORMAT="json",
            RUST_LOG="info",
        )
        self.proc = subprocess.Popen([binary, "serve"], env=env, stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tickets serve exited: see {self.log.name}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("tickets serve did not become ready")

    def cli(self, *args):
        done = subprocess.run(
            [self.binary, "--database-url", self.database_url, "--database-pooler", self.pooler, *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Record:
    """What every client saw, thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = collections.Counter()
        self.acks = []  # (time, kind, text, resource id, key)
        self.unsettled = 0
        self.errors_500 = []

    def saw(self, status, body=b""):
        with self.lock:
            self.statuses[status] += 1
            if status == 500:
                self.errors_500.append(body[:300].decode("utf-8", "replace"))


class Client(threading.Thread):
    """Creates a ticket, then in turn edits it, comments on it and creates
    the next one, each intent under a fresh key sent until it has a final
    answer."""

    def __init__(self, n, port, token, record, stop):
        super().__init__(daemon=True)
        self.n, self.port, self.token, self.record, self.stop = n, port, token, record, stop
        self.ticket = None

    def send(self, method, path, key, body):
        """One attempt: (status, body bytes, Retry-After); status 0 when no
        answer came."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
            c.request(
                method,
                path,
                body=json.dumps(body),
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Idempotency-Key": key,
                    "Content-Type": (
                        "application/merge-patch+json" if method == "PATCH" else "application/json"
                    ),
                },
            )
            answer = c.getresponse()
            data = answer.read()
            retry_after = answer.getheader("Retry-After")
            c.close()
            return answer.status, data, retry_after
        except OSError:
            return 0, b"", None

    def settle(self, kind, path, body, method="POST"):
        """Sends one intent until it has a final answer; records the ack."""
        key = str(uuid.uuid4())
        while True:
            status, data, retry_after = self.send(method, path, key, body)
            self.record.saw(status, data)
            if status in FINAL and not (status == 409 and b"operation-in-progress" in data):
                break
            # No answer, a 503 or a 500, or in progress: the same key again.
            wait = min(float(retry_after or 0.2), 1.0)
            time.sleep(max(wait, 0.05))
        if status not in (200, 201):
            raise AssertionError(f"{kind} {key} ended {status}: {data[:300]!r}")
        made = json.loads(data)
        with self.record.lock:
            text = body.get("title") or body.get("body") or body.get("description")
            self.record.acks.append((time.time(), kind, text, made["id"], key))
        return made

    def run(self):
        i = 0
        while not self.stop.is_set():
            i += 1
            if self.ticket is None or i % 3 == 0:
                text = f"client {self.n} ticket {uuid.uuid4()}"
                self.ticket = self.settle("ticket", "/v1/tickets", {"project_id": "ops", "title": text})
            elif i % 3 == 1:
                text = f"client {self.n} edit {uuid.uuid4()}"
                path = f"/v1/tickets/{self.ticket['id']}"
                self.settle("edit", path, {"description": text}, method="PATCH")
            else:
                text = f"client {self.n} comment {uuid.uuid4()}"
                self.settle("comment", f"/v1/tickets/{self.ticket['id']}/comments", {"body": text})


def refuses_a_standby(binary, replica_url):
    """Whether `tickets` pointed at a replica stops with a clear error
    instead of serving reads and refusing every write. (It names the
    problem at each attempt; 2 s of patience instead of the default 30
    keeps the test short.)"""
    done = subprocess.run(
        [binary, "--database-url", replica_url, "--database-start-timeout-secs", "2", "tenant", "list"],
        capture_output=True,
        text=True,
    )
    said = done.stderr.strip().splitlines()[-1:] or [""]
    say(f"pointed at a standby: exit {done.returncode}: {said[0]}")
    return done.returncode == 1 and "read-only standby" in done.stderr


def longest_pause_after(acks, at, until):
    """Longest gap between acknowledged writes in [at, until], counted from
    `at` (so an outage that starts at the event is measured whole)."""
    times = [at] + sorted(t for t, *_ in acks if at <= t <= until) + [until]
    return max(b - a for a, b in zip(times, times[1:]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=2)
    p.add_argument("--switchovers", type=int, default=1)
    p.add_argument("--etcd-outages", type=int, default=0)
    p.add_argument("--clients", type=int, default=6)
    p.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "tickets"))
    p.add_argument("--work", default=os.path.join(ROOT, "target", "ha", "failover"))
    p.add_argument("--pgbouncer", action="store_true",
                   help="through pgbouncer in transaction mode (DATABASE_POOLER=transaction)")
    p.add_argument("--json", help="write the report here too")
    args = p.parse_args()
    install()
    started = time.time()
    with Cluster(args.work, nodes=2, pgbouncer=args.pgbouncer) as cluster:
        if args.pgbouncer:
            service = Service(args.binary, cluster.pgbouncer_url, args.work, pooler="transaction")
        else:
            service = Service(args.binary, cluster.primary_url, args.work)
        pid = service.proc.pid
        try:
            service.cli("tenant", "create", "acme")
            token = service.cli("token", "issue", "acme")
            standby = refuses_a_standby(args.binary, cluster.replica_url)
            record, stop = Record(), threading.Event()
            clients = [Client(n, service.port, token, record, stop) for n in range(args.clients)]
            for c in clients:
                c.start()
            time.sleep(3)
            events = []
            for k in range(args.kills):
                killed = cluster.kill_primary()
                at = killed["at"]
                cluster.wait_healthy(sync=False)
                recovered = time.time()
                cluster.restart_node(killed["node"])
                cluster.wait_healthy()
                events.append(("kill", at, recovered))
                say(f"kill {k + 1}: {killed['node']} killed, healthy again after {recovered - at:.1f} s")
                time.sleep(2)
            for k in range(args.switchovers):
                at = time.time()
                cluster.switchover()
                cluster.wait_healthy()
                events.append(("switchover", at, time.time()))
                say(f"switchover {k + 1} done after {time.time() - at:.1f} s")
                time.sleep(2)
            for k in range(args.etcd_outages):
                at = cluster.stop_etcd()
                time.sleep(1.5 * cluster.ttl)
                cluster.start_etcd()
                cluster.wait_healthy()
                events.append(("etcd outage", at, time.time()))
                say(f"etcd outage {k + 1}: back and healthy after {time.time() - at:.1f} s")
                time.sleep(2)
            time.sleep(2)
            stop.set()
            for c in clients:
                c.join(120)
                if c.is_alive():
                    raise AssertionError(f"client {c.n} still has an unsettled write after 120 s")
            alive = service.proc.poll() is None and service.proc.pid == pid
            report = check(cluster, record, events, alive, started)
            report["checks"]["a standby's URL is refused at start, by name"] = standby
        finally:
            service.stop()
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    failed = [name for name, ok in report["checks"].items() if not ok]
    if failed:
        say("FAILED: " + ", ".join(failed))
        sys.exit(1)
    say("passed")


def check(cluster, record, events, alive, started):
    url = cluster.admin_url(db="tickets")

    def rows(sql):
        ok, out, err = psql(url, sql, timeout=60)
        if not ok:
            raise RuntimeError(f"{sql}: {err}")
        return [line for line in out.splitlines() if line]

    tickets = rows("SELECT id, title FROM tickets")
    comments = rows("SELECT id, body FROM ticket_comments")
    by_text = collections.Counter(line.split("|", 1)[1] for line in tickets + comments)
    ids = {line.split("|", 1)[0] for line in tickets + comments}
    # An edit sets a text nothing else has, so a second effect of its key
    # would be a second history entry (and its text, a changed description).
    edits = collections.Counter(rows("SELECT operation_key FROM ticket_history WHERE action = 'update_ticket'"))
    duplicates = sum(n - 1 for n in by_text.values() if n > 1) + sum(n - 1 for n in edits.values() if n > 1)
    lost = [a for a in record.acks if (a[4] not in edits if a[1] == "edit" else a[3] not in ids)]
    unsettled = rows("SELECT count(*) FROM operations WHERE state <> 'succeeded'")[0]
    pauses = [
        {
            "event": kind,
            "healthy_after_s": round(recovered - at, 1),
            "longest_write_pause_s": round(longest_pause_after(record.acks, at, recovered + 5), 1),
        }
        for kind, at, recovered in events
    ]
    statuses = {str(k): v for k, v in sorted(record.statuses.items())}
    return {
        "seconds": round(time.time() - started),
        "acknowledged": len(record.acks),
        "acknowledged_by_kind": dict(collections.Counter(a[1] for a in record.acks)),
        "rows": len(tickets) + len(comments) + sum(edits.values()),
        "duplicates": duplicates,
        "lost": len(lost),
        "unsettled_records": int(unsettled),
        "statuses": statuses,
        "events": pauses,
        "sample_500s": record.errors_500[:5],
        "checks": {
            "no duplicate effect": duplicates == 0,
            "no acknowledged write lost": not lost,
            "every key settled": int(unsettled) == 0,
            "no 500 answered": record.statuses.get(500, 0) == 0,
            "writes go on while etcd is away (failsafe mode)": all(
                p["longest_write_pause_s"] <= 2.0 for p in pauses if p["event"] == "etcd outage"
            ),
            "the service was never restarted": alive,
        },
    }


if __name__ == "__main__":
    main()
