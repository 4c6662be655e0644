"""The service behind a real pgbouncer in transaction mode.

pgbouncer (Debian's, installed if missing) runs on a free loopback port in
front of the shared PostgreSQL (`TEST_POSTGRES_URL`, default
127.0.0.1:5432; only read, never reconfigured), with `pool_mode =
transaction`, under target/ha/pgbouncer/. Then, through it:

1. the kitchen's PostgreSQL tests (every `postgres` test of the kitchen
   crate), whose kitchens connect through pgbouncer with
   `DATABASE_POOLER=transaction` (`TEST_POSTGRES_POOLER_URL`);
2. two `tickets serve` instances on one database, both through pgbouncer
   with `DATABASE_POOLER=transaction`, and the double-fire driver's checks
   against them (1 to 7, and 9: the same key at both instances at once).

With `--compare`, it also starts one instance with `DATABASE_POOLER=none`
through the same pgbouncer and reports how many of a burst of creates
failed (sqlx's named statements meeting other clients' server
connections). That only shows why the setting exists; it is not a check.

    cargo build --bin tickets --bin double-fire
    python3 tests/ha/pgbouncer.py [--compare] [--skip-kitchen]

Needs root for apt-get when pgbouncer is missing; pgbouncer refuses to run
as root, so it runs as `postgres` then. Stops what it started, by pid.
"""

import argparse
import concurrent.futures
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "harness"))
sys.path.insert(0, HERE)
from checks import check, finish  # noqa: E402
from cluster import apt_install, free_port, psql, say  # noqa: E402

SERVER = os.environ.get("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
TICKETS = os.path.join(ROOT, "target", "debug", "tickets")
DOUBLE_FIRE = os.path.join(ROOT, "target", "debug", "double-fire")


def host_port_user(url):
    """(host, port, user) of a postgres:// URL (the forms these tests use)."""
    rest = url.split("://", 1)[1].split("/", 1)[0]
    user, _, hostport = rest.rpartition("@")
    host, _, port = hostport.partition(":")
    return host or "127.0.0.1", int(port or 5432), (user.split(":")[0] or "postgres")


def with_database(url, port, db):
    _, _, user = host_port_user(url)
    return f"postgres://{user}@127.0.0.1:{port}/{db}"


def install():
    if not (shutil.which("pgbouncer") or os.path.exists("/usr/sbin/pgbouncer")):
        say("installing pgbouncer")
        apt_install(["pgbouncer"])


class Pgbouncer:
    """One pgbouncer in transaction mode in front of `server`."""

    def __init__(self, work, server):
        self.work, self.server = work, server
        self.port = free_port()
        self.proc = None

    def __enter__(self):
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        host, port, user = host_port_user(self.server)
        with open(os.path.join(self.work, "userlist.txt"), "w") as f:
            f.write(f'"{user}" ""\n')
        with open(os.path.join(self.work, "pgbouncer.ini"), "w") as f:
            f.write(
                f"""[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.work}/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
; sqlx sends extra_float_digits in its startup packet
ignore_startup_parameters = extra_float_digits
query_wait_timeout = 20
server_login_retry = 1
"""
            )
        kwargs = {}
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            kwargs = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
            for name in os.listdir(self.work):
                os.chown(os.path.join(self.work, name), pw.pw_uid, pw.pw_gid)
            os.chown(self.work, pw.pw_uid, pw.pw_gid)
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        self.proc = subprocess.Popen(
            [binary, os.path.join(self.work, "pgbouncer.ini")],
            stdout=open(os.path.join(self.work, "pgbouncer.log"), "w"),
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            **kwargs,
        )
        deadline = time.time() + 30
        while not psql(self.url("postgres"), "SELECT 1")[0]:
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"FAIL: pgbouncer did not start; see {self.work}/pgbouncer.log")
            time.sleep(0.2)
        say(f"pgbouncer (pid {self.proc.pid}) on port {self.port}, transaction mode")
        return self

    def url(self, db):
        return with_database(self.server, self.port, db)

    def __exit__(self, *_):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Service:
    """`tickets serve` on a free port with `env`; stopped by pid."""

    def __init__(self, env, log):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc = subprocess.Popen(
            [TICKETS, "serve", "--listen", f"127.0.0.1:{self.port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(log, "w"),
        )
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"FAIL: tickets serve did not get ready; see {log}")
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def fresh_database():
    name = f"pgbouncer_{uuid.uuid4().hex[:12]}"
    ok, _, err = psql(SERVER, f'CREATE DATABASE "{name}"')
    if not ok:
        raise SystemExit(f"FAIL: cannot create a database on {SERVER}: {err}")
    return name


def drop_database(name):
    psql(SERVER, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tickets(env, *args):
    out = subprocess.run([TICKETS, *args], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: tickets {' '.join(args)}: {out.stderr}")
    return out.stdout.strip()


def create(url, token, n):
    body = json.dumps({"project_id": "ops", "title": f"burst {n} {uuid.uuid4()}"}).encode()
    request = urllib.request.Request(
        url + "/v1/tickets",
        data=body,
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Idempotency-Key": str(uuid.uuid4()),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        if n < 3:
            say(f"create answered {e.code}: {e.read()[:300]!r}")
        return e.code
    except OSError as e:
        if n < 3:
            say(f"create got no answer: {e}")
        return 0


def kitchen_tests(bouncer):
    say("the kitchen's PostgreSQL tests, their kitchens through pgbouncer")
    env = dict(
        os.environ,
        TEST_POSTGRES_URL=SERVER,
        TEST_POSTGRES_POOLER_URL=bouncer.url("postgres"),
    )
    run = subprocess.run(
        # --workspace, filtered: `-p kitchen` alone would build the
        # dependencies again with the kitchen's own features.
        ["cargo", "nextest", "run", "--workspace", "--no-fail-fast", "-E",
         "package(kitchen) and test(/postgres/)"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = [line for line in run.stderr.splitlines() if "Summary" in line or "FAIL [" in line]
    print("\n".join(summary[-20:]))
    check("the kitchen's PostgreSQL tests pass through pgbouncer", run.returncode == 0, "(the failures are above)")


def service_checks(bouncer, work):
    db = fresh_database()
    try:
        env = dict(os.environ, DATABASE_URL=bouncer.url(db), DATABASE_POOLER="transaction")
        tickets(env, "tenant", "create", "acme")
        tickets(env, "tenant", "create", "globex")
        acme = tickets(env, "token", "issue", "acme")
        globex = tickets(env, "token", "issue", "globex")
        first = Service(env, os.path.join(work, "first.log"))
        second = Service(env, os.path.join(work, "second.log"))
        try:
            say(f"two instances through pgbouncer: {first.url}, {second.url}; the double-fire driver")
            for only in ["1", "2", "3", "4", "5", "6", "7", "9"]:
                run = subprocess.run(
                    [DOUBLE_FIRE, "--url", first.url, "--token", acme, "--other-token", globex,
                     "--second-url", second.url, "--only", only],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                tail = (run.stdout + run.stderr).strip().splitlines()[-3:]
                check(f"double-fire check {only} through pgbouncer", run.returncode == 0, "\n".join(tail))
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                statuses = list(pool.map(lambda n: create(first.url, acme, n), range(200)))
            check("200 concurrent creates through pgbouncer: all 201", statuses.count(201) == 200,
                  f"statuses {sorted(set(statuses))}")
            for service in (first, second):
                with open(service.log) as f:
                    log = f.read()
                check(f"no prepared-statement error in {os.path.basename(service.log)}",
                      "prepared statement" not in log, "see " + service.log)
        finally:
            first.stop()
            second.stop()
    finally:
        drop_database(db)


def compare(bouncer, work):
    """The same burst with DATABASE_POOLER=none: reported, not checked."""
    db = fresh_database()
    try:
        env = dict(os.environ, DATABASE_URL=bouncer.url(db), DATABASE_POOLER="none")
        tickets(env, "tenant", "create", "acme")
        try:
            acme = tickets(env, "token", "issue", "acme")
        except SystemExit as refused:
            print(f"for comparison, DATABASE_POOLER=none through pgbouncer: {refused}")
            return
        service = Service(env, os.path.join(work, "none.log"))
        try:
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                statuses = list(pool.map(lambda n: create(service.url, acme, n), range(200)))
        finally:
            service.stop()
        with open(service.log) as f:
            named = f.read().count("prepared statement")
        print(f"for comparison, DATABASE_POOLER=none through pgbouncer: of 200 creates "
              f"{statuses.count(201)} answered 201, the others {sorted(set(statuses) - {201})}; "
              f"{named} prepared-statement errors logged")
    finally:
        drop_database(db)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", action="store_true", help="also run with DATABASE_POOLER=none and report")
    parser.add_argument("--skip-kitchen", action="store_true", help="only the service checks")
    args = parser.parse_args()
    for binary in (TICKETS, DOUBLE_FIRE):
        if not os.path.exists(binary):
            raise SystemExit(f"FAIL: {binary} is missing; run cargo build --bin tickets --bin double-fire")
    install()
    work = os.path.join(ROOT, "target", "ha", "pgbouncer")
    started = time.time()
    with Pgbouncer(work, SERVER) as bouncer:
        if not args.skip_kitchen:
            kitchen_tests(bouncer)
        service_checks(bouncer, work)
        if args.compare:
            compare(bouncer, work)
    say(f"done in {time.time() - started:.0f} s")
    finish()


if __name__ == "__main__":
    main()
