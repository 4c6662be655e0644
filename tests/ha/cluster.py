#!/usr/bin/env python3
"""A highly-available PostgreSQL on loopback, for failover tests.

One etcd, N Patroni nodes (PostgreSQL 15, synchronous_mode), HAProxy in
front (a `primary` port checked with Patroni's `GET /primary`, a
`replicas` port checked with `GET /replica`) and, optionally, pgbouncer in
transaction pooling mode in front of HAProxy's primary port. Every file
lives under the work directory (under target/); every process is started
here, runs as the `postgres` user when we are root (PostgreSQL refuses
root), and is stopped here by pid.

    python3 tests/ha/cluster.py serve [--nodes N] [--pgbouncer]
    python3 tests/ha/cluster.py selftest

As a module:

    from cluster import Cluster, install
    install()
    with Cluster("target/ha/mytest", nodes=2, pgbouncer=True) as c:
        c.primary_url, c.replica_url, c.pgbouncer_url, c.direct_url("node1")
        killed = c.kill_primary()          # {"node": ..., "at": epoch s}
        c.wait_healthy()
        c.restart_node(killed["node"])
        c.switchover()
        c.stop_etcd(); c.start_etcd()

Standard library only (plus the Debian packages' binaries); the
selftest's write probes (probe.py) run under /usr/bin/python3 with the
psycopg2 that the `patroni` package brings.
"""

import argparse
import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

from services import ROOT, free_port, http, wait_for  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
PACKAGES = ["patroni", "etcd-server", "etcd-client", "haproxy", "pgbouncer"]
BINARIES = ["patroni", "patronictl", "etcd", "haproxy", "pgbouncer", "psql"]
RUN_AS = "postgres"
SUPERUSER_PASSWORD = "ha-superuser"
APP_USER, APP_PASSWORD, APP_DB = "tickets", "tickets", "tickets"

os.environ["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/bin"


def say(*args):
    print(time.strftime("%H:%M:%S"), *args, file=sys.stderr, flush=True)


# --- installing --------------------------------------------------------------


def missing_binaries():
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if not os.path.exists(os.path.join(PG_BIN, "postgres")):
        missing.append(os.path.join(PG_BIN, "postgres"))
    return missing


def _pids_of(names):
    found = set()
    for pid in _all_pids():
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
        except OSError:
            continue
        if comm in names:
            found.add(pid)
    return found


def install():
    """apt-get install what is missing (idempotent). Package scripts are
    kept from starting system services (etcd on 2379, haproxy, pgbouncer):
    a policy-rc.d that denies starts is put in place for the install when
    the machine has none; any daemon that appears anyway is stopped by pid."""
    missing = missing_binaries()
    if not missing:
        return
    say("installing", " ".join(PACKAGES), "(missing:", ", ".join(missing) + ")")
    packages = list(PACKAGES)
    if not os.path.exists(os.path.join(PG_BIN, "postgres")):
        packages.append("postgresql-15")
    apt_install(packages)
    still = missing_binaries()
    if still:
        raise SystemExit(f"FAIL: still missing after install: {still}")


def apt_install(packages):
    """apt-get install `packages`, kept from starting their services."""
    policy = "/usr/sbin/policy-rc.d"
    placed = False
    if not os.path.exists(policy):
        with open(policy, "w") as f:
            f.write("#!/bin/sh\n# placed by tests/ha/cluster.py for one apt-get install\nexit 101\n")
        os.chmod(policy, 0o755)
        placed = True
    daemons = {"etcd", "haproxy", "pgbouncer", "patroni"}
    before = _pids_of(daemons)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
    finally:
        if placed:
            os.unlink(policy)
    started = _pids_of(daemons) - before
    for pid in started:
        say(f"stopping pid {pid} ({_cmdline(pid)}), started by the package install")
        _signal(pid, signal.SIGTERM)


# --- processes ---------------------------------------------------------------


def _all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _stat(pid):
    """(state, ppid) or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _uid(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _alive(pid):
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _children(pid):
    return [p for p in _all_pids() if (_stat(p) or (None, None))[1] == pid]


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _wait_gone(pids, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


def _run_as():
    """(uid, gid) to run servers as, or None to run as ourselves."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam(RUN_AS)
    return pw.pw_uid, pw.pw_gid


def _chown_tree(path, ids):
    if ids is None:
        return
    uid, gid = ids
    for dirpath, dirnames, filenames in os.walk(path):
        os.chown(dirpath, uid, gid)
        for name in filenames:
            os.chown(os.path.join(dirpath, name), uid, gid)


def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        st = _stat(pid)
        if st is None:
            break
        pid = st[1]
    return pids


def reap(work, scope):
    """Kill (by pid, SIGKILL) what a cluster in `work` left running: the
    processes of the server user whose command line names the work
    directory (etcd, patroni, haproxy, pgbouncer, postmasters) and the
    PostgreSQL children titled with the cluster's name. Returns the pids."""
    ids = _run_as()
    uid = ids[0] if ids else os.geteuid()
    mine = _ancestors()
    hit = []
    for pid in _all_pids():
        if pid in mine or _uid(pid) != uid:
            continue
        cmd = _cmdline(pid)
        if (work + "/") in cmd or cmd.endswith(work) or cmd.startswith(f"postgres: {scope}:"):
            if _alive(pid):
                hit.append(pid)
    for pid in hit:
        _signal(pid, signal.SIGKILL)
    _wait_gone(hit, 10)
    return hit


# --- small clients -----------------------------------------------------------


def get_json(url, timeout=2.0):
    """(status, parsed body or None); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            body = answer.read()
            status = answer.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    except (OSError, ValueError):
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def psql(url, sql, timeout=15):
    """(ok, stdout, stderr) of one psql -c; errors carry their SQLSTATE
    (VERBOSITY verbose: `ERROR:  25006: cannot execute ...`)."""
    env = dict(os.environ, PGCONNECT_TIMEOUT="3")
    try:
        done = subprocess.run(
            ["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-d", url, "-c", sql],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return False, "", f"psql: no answer within {timeout} s"
    return done.returncode == 0, done.stdout.strip(), done.stderr.strip()


# --- the cluster -------------------------------------------------------------


class Cluster:
    """One HA PostgreSQL cluster on loopback; a context manager.

    Timing settings (Patroni dynamic configuration): `ttl` (leader key
    lease), `loop_wait` (seconds between HA loops), `retry_timeout` (DCS
    and PostgreSQL retries); Patroni wants loop_wait + 2*retry_timeout <=
    ttl. `failsafe` sets failsafe_mode (the leader keeps its role while
    etcd is down if it can reach every member over the REST API)."""

    def __init__(
        self,
        work_dir,
        nodes=2,
        pgbouncer=False,
        ttl=10,
        loop_wait=1,
        retry_timeout=4,
        failsafe=True,
        query_wait_timeout=20,
    ):
        self.work = os.path.abspath(work_dir)
        allowed = [os.path.join(ROOT, "target"), os.path.realpath("/tmp")]
        if not any(self.work.startswith(a + os.sep) for a in allowed):
            # the work directory is wiped at start: keep it where that is harmless
            raise ValueError(f"work_dir must be under {ROOT}/target/ or /tmp/: {self.work}")
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.names = [f"node{i}" for i in range(1, nodes + 1)]
        self.with_pgbouncer = pgbouncer
        self.ttl, self.loop_wait, self.retry_timeout = ttl, loop_wait, retry_timeout
        self.failsafe = failsafe
        self.query_wait_timeout = query_wait_timeout
        self.scope = "ha-" + hashlib.sha1(self.work.encode()).hexdigest()[:8]
        self.ids = _run_as()
        self.procs = {}
        self.timings = {}
        ports = set()
        while len(ports) < 6 + 2 * nodes:
            ports.add(free_port())
        ports = sorted(ports)
        self.etcd_port, self.etcd_peer_port = ports.pop(), ports.pop()
        self.haproxy_primary_port, self.haproxy_replica_port = ports.pop(), ports.pop()
        self.haproxy_stats_port, self.pgbouncer_port = ports.pop(), ports.pop()
        self.pg_port = {n: ports.pop() for n in self.names}
        self.rest_port = {n: ports.pop() for n in self.names}

    # ---- URLs and paths

    @property
    def primary_url(self):
        return self._url(self.haproxy_primary_port)

    @property
    def replica_url(self):
        return self._url(self.haproxy_replica_port)

    @property
    def pgbouncer_url(self):
        return self._url(self.pgbouncer_port) if self.with_pgbouncer else None

    def direct_url(self, node):
        return self._url(self.pg_port[node])

    def admin_url(self, port=None, db="postgres"):
        """The superuser on `port` (default: HAProxy's primary port)."""
        port = port or self.haproxy_primary_port
        return f"postgres://postgres:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/{db}"

    def _url(self, port):
        return f"postgres://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{port}/{APP_DB}"

    @property
    def etcd_url(self):
        return f"http://127.0.0.1:{self.etcd_port}"

    def rest_url(self, node):
        return f"http://127.0.0.1:{self.rest_port[node]}"

    def config_path(self, node):
        return os.path.join(self.work, f"{node}.yml")

    def data_dir(self, node):
        return os.path.join(self.work, node, "data")

    def describe(self):
        return {
            "primary_url": self.primary_url,
            "replica_url": self.replica_url,
            "pgbouncer_url": self.pgbouncer_url,
            "direct_urls": {n: self.direct_url(n) for n in self.names},
            "admin_url": self.admin_url(),
            "patroni_rest": {n: self.rest_url(n) for n in self.names},
            "patronictl": f"patronictl -c {self.config_path(self.names[0])}",
            "etcd": self.etcd_url,
            "haproxy_stats": f"http://127.0.0.1:{self.haproxy_stats_port}/",
            "work_dir": self.work,
            "bootstrap_s": self.timings.get("bootstrap_s"),
        }

    # ---- lifecycle

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_):
        self.stop()

    def start(self):
        t0 = time.time()
        left = reap(self.work, self.scope)
        if left:
            say(f"killed {len(left)} processes left by an earlier run in {self.work}")
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self._write_configs()
        _chown_tree(self.work, self.ids)
        self.start_etcd()
        for node in self.names:
            self._start_patroni(node)
        self._start("haproxy", ["haproxy", "-db", "-f", os.path.join(self.work, "haproxy.cfg")])
        self.wait_healthy(timeout=240, pgbouncer=False)
        self._create_app_database()
        if self.with_pgbouncer:
            self._start("pgbouncer", ["pgbouncer", os.path.join(self.work, "pgbouncer.ini")])
            wait_for("pgbouncer answers SQL", lambda: psql(self.pgbouncer_url, "SELECT 1")[0], 60)
        self.timings["bootstrap_s"] = round(time.time() - t0, 1)
        say(f"cluster up in {self.timings['bootstrap_s']} s, leader {self.leader()}")
        return self

    def stop(self):
        """Stop everything started here, by pid; then kill whatever is left."""
        for name in ("pgbouncer", "haproxy"):
            self._stop_proc(name, signal.SIGTERM, 10)
        nodes = [n for n in self.names if self._running(n)]
        for node in nodes:
            self.procs[node].send_signal(signal.SIGTERM)
        for node in nodes:
            self._stop_proc(node, signal.SIGTERM, 30)
        for node in self.names:
            self._kill_postgres(node, signal.SIGQUIT)
        self._stop_proc("etcd", signal.SIGTERM, 10)
        left = reap(self.work, self.scope)
        if left:
            say(f"killed {len(left)} leftover processes: {left}")

    def _start(self, name, argv):
        log = open(os.path.join(self.work, f"{name}.log"), "a")
        log.write(f"\n=== {time.strftime('%H:%M:%S')} start {' '.join(argv)}\n")
        log.flush()
        env = dict(os.environ, HOME=self.work, LC_ALL="C.UTF-8", LANG="C.UTF-8")
        kwargs = {}
        if self.ids:
            kwargs = dict(user=self.ids[0], group=self.ids[1], extra_groups=[])
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.work,
            env=env,
            start_new_session=True,
            **kwargs,
        )
        log.close()
        self.procs[name] = proc
        return proc

    def _running(self, name):
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def _stop_proc(self, name, sig, seconds):
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def postmaster_pid(self, node):
        """The node's postmaster pid (from postmaster.pid), if it runs."""
        try:
            with open(os.path.join(self.data_dir(node), "postmaster.pid")) as f:
                pid = int(f.readline().strip())
        except (OSError, ValueError):
            return None
        if _alive(pid) and self.data_dir(node) in _cmdline(pid):
            return pid
        return None

    def _kill_postgres(self, node, sig):
        pm = self.postmaster_pid(node)
        if pm is None:
            return []
        pids = [pm] + _children(pm)
        _signal(pm, sig)
        if sig == signal.SIGKILL:
            for pid in pids[1:]:
                _signal(pid, signal.SIGKILL)
        if not _wait_gone(pids, 15):
            for pid in pids:
                _signal(pid, signal.SIGKILL)
            _wait_gone(pids, 5)
        return pids

    # ---- configuration

    def _write_configs(self):
        for node in self.names:
            os.makedirs(os.path.join(self.work, node), mode=0o700)
            with open(self.config_path(node), "w") as f:
                # JSON is YAML: Patroni reads it with yaml.safe_load.
                json.dump(self._patroni_config(node), f, indent=2)
        os.makedirs(os.path.join(self.work, "etcd"), mode=0o700)
        with open(os.path.join(self.work, "haproxy.cfg"), "w") as f:
            f.write(self._haproxy_config())
        with open(os.path.join(self.work, "pgbouncer.ini"), "w") as f:
            f.write(self._pgbouncer_config())
        with open(os.path.join(self.work, "userlist.txt"), "w") as f:
            f.write(f'"{APP_USER}" "{APP_PASSWORD}"\n"postgres" "{SUPERUSER_PASSWORD}"\n')

    def _patroni_config(self, node):
        host = "127.0.0.1"
        return {
            "scope": self.scope,
            "namespace": "/service/",
            "name": node,
            "log": {"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
            "restapi": {
                "listen": f"{host}:{self.rest_port[node]}",
                "connect_address": f"{host}:{self.rest_port[node]}",
            },
            "etcd3": {"hosts": [f"{host}:{self.etcd_port}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": self.ttl,
                    "loop_wait": self.loop_wait,
                    "retry_timeout": self.retry_timeout,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    "synchronous_mode_strict": False,
                    "failsafe_mode": self.failsafe,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_level": "replica",
                            "hot_standby": "on",
                            "wal_log_hints": "on",
                            "max_connections": 100,
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "wal_keep_size": "128MB",
                            "shared_buffers": "32MB",
                            "synchronous_commit": "on",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "data-checksums"],
            },
            "postgresql": {
                "listen": f"{host}:{self.pg_port[node]}",
                "connect_address": f"{host}:{self.pg_port[node]}",
                "data_dir": self.data_dir(node),
                "bin_dir": PG_BIN,
                "pgpass": os.path.join(self.work, node, "pgpass"),
                "authentication": {
                    "superuser": {"username": "postgres", "password": SUPERUSER_PASSWORD},
                    "replication": {"username": "replicator", "password": "ha-replicator"},
                    "rewind": {"username": "rewinder", "password": "ha-rewinder"},
                },
                "parameters": {
                    "unix_socket_directories": os.path.join(self.work, node),
                    "cluster_name": self.scope,
                    "logging_collector": "off",
                },
                "pg_hba": [
                    "local all all trust",
                    "local replication all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication all 127.0.0.1/32 trust",
                ],
                "remove_data_directory_on_rewind_failure": True,
                "remove_data_directory_on_diverged_timelines": True,
            },
            "watchdog": {"mode": "off"},
            "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
        }

    def _haproxy_config(self):
        def servers(path):
            lines = [
                "    option httpchk",
                f"    http-check send meth GET uri {path}",
                "    http-check expect status 200",
                "    default-server inter 1s fastinter 500ms downinter 1s rise 1 fall 2 on-marked-down shutdown-sessions",
            ]
            for n in self.names:
                lines.append(f"    server {n} 127.0.0.1:{self.pg_port[n]} check port {self.rest_port[n]}")
            return "\n".join(lines)

        return f"""global
    maxconn 512
    log stdout format raw local0 info

defaults
    mode tcp
    log global
    option tcplog
    retries 2
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 2s

listen stats
    mode http
    bind 127.0.0.1:{self.haproxy_stats_port}
    stats enable
    stats uri /

listen primary
    bind 127.0.0.1:{self.haproxy_primary_port}
{servers('/primary')}

listen replicas
    bind 127.0.0.1:{self.haproxy_replica_port}
    balance roundrobin
{servers('/replica')}
"""

    def _pgbouncer_config(self):
        return f"""[databases]
* = host=127.0.0.1 port={self.haproxy_primary_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.pgbouncer_port}
unix_socket_dir =
auth_type = trust
auth_file = {os.path.join(self.work, 'userlist.txt')}
admin_users = postgres
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
; sqlx sends extra_float_digits in its startup packet
ignore_startup_parameters = extra_float_digits
; how long a client's query waits for a server connection (failover)
query_wait_timeout = {self.query_wait_timeout}
server_connect_timeout = 3
server_login_retry = 1
server_check_delay = 10
log_connections = 1
log_disconnections = 1
log_pooler_errors = 1
"""

    # ---- etcd

    def start_etcd(self):
        url, peer = self.etcd_url, f"http://127.0.0.1:{self.etcd_peer_port}"
        self._start(
            "etcd",
            [
                "etcd",
                "--name", "ha",
                "--data-dir", os.path.join(self.work, "etcd"),
                "--listen-client-urls", url,
                "--advertise-client-urls", url,
                "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"ha={peer}",
                "--initial-cluster-state", "new",
                "--initial-cluster-token", self.scope,
                "--logger", "zap",
                "--log-level", "warn",
            ],
        )
        wait_for("etcd is healthy", lambda: get_json(f"{url}/health")[1] == {"health": "true"}, 60)
        return time.time()

    def stop_etcd(self, sig=signal.SIGKILL):
        """etcd goes away (SIGKILL by default: a crash, not a goodbye).
        Returns the time it was signalled."""
        t = time.time()
        self._stop_proc("etcd", sig, 10)
        return t

    # ---- Patroni

    def _start_patroni(self, node):
        return self._start(node, ["patroni", self.config_path(node)])

    def members(self):
        """Patroni's /cluster member list, from the first node that answers."""
        for node in self._answering_order():
            status, body = get_json(f"{self.rest_url(node)}/cluster")
            if status == 200 and body and "members" in body:
                return body["members"]
        return []

    def _answering_order(self):
        return [n for n in self.names if self._running(n)] + [n for n in self.names if not self._running(n)]

    def leader(self):
        """The leader's node name per the DCS, or None."""
        for m in self.members():
            if m.get("role") == "leader" and m.get("state") == "running":
                return m["name"]
        return None

    def patroni_status(self, node):
        return get_json(f"{self.rest_url(node)}/patroni")[1]

    def is_primary(self, node):
        """What HAProxy asks: GET /primary answers 200."""
        return get_json(f"{self.rest_url(node)}/primary")[0] == 200

    def routed_to(self, url=None):
        """(server port, in recovery) answering on `url` (HAProxy's primary
        port by default), or None."""
        ok, out, _ = psql(url or self.admin_url(), "SELECT inet_server_port(), pg_is_in_recovery()", 10)
        if not ok or "|" not in out:
            return None
        port, rec = out.split("|")
        return int(port), rec == "t"

    def healthy(self, sync=True, pgbouncer=True):
        """The leader's name when there is a Leader, (with `sync`) a running
        sync standby, and HAProxy's primary port reaches the leader
        read-write (and pgbouncer answers SQL, when on); else None."""
        members = self.members()
        leader = next((m["name"] for m in members if m.get("role") == "leader" and m.get("state") == "running"), None)
        if leader is None:
            return None
        if sync and len(self.names) > 1:
            if not any(m.get("role") == "sync_standby" and m.get("state") in ("running", "streaming") for m in members):
                return None
        if self.routed_to() != (self.pg_port[leader], False):
            return None
        if pgbouncer and self.with_pgbouncer and self._running("pgbouncer"):
            if not psql(self.pgbouncer_url, "SELECT 1", 10)[0]:
                return None
        return leader

    def wait_healthy(self, timeout=120, sync=True, pgbouncer=True):
        """Wait for healthy(); returns (leader, seconds waited)."""
        t0 = time.time()
        leader = wait_for(
            "the cluster is healthy (leader, sync standby, HAProxy routes to the leader)",
            lambda: self.healthy(sync=sync, pgbouncer=pgbouncer),
            timeout,
        )
        return leader, round(time.time() - t0, 2)

    def kill_primary(self):
        """kill -9 the leader's Patroni and its postmaster (and the
        postmaster's children: the host is gone). Returns
        {"node", "at" (epoch s), "pids"}."""
        leader = self.leader()
        if leader is None:
            raise RuntimeError("no leader to kill")
        return self.kill_node(leader)

    def kill_node(self, node):
        proc = self.procs[node]
        pm = self.postmaster_pid(node)
        victims = [proc.pid] + ([pm] + _children(pm) if pm else [])
        t = time.time()
        for pid in victims:
            _signal(pid, signal.SIGKILL)
        proc.wait()
        _wait_gone(victims, 10)
        say(f"killed {node} (patroni {proc.pid}, postmaster {pm}, {len(victims) - 2} children)")
        return {"node": node, "at": t, "pids": victims}

    def restart_node(self, node, timeout=180):
        """Start a killed (or stopped) node's Patroni again; wait until it
        runs as a replica that streams from the leader (a sync standby
        when it is the only replica). Returns the seconds it took."""
        if self._running(node):
            raise RuntimeError(f"{node} is running")
        self._kill_postgres(node, signal.SIGKILL)
        t0 = time.time()
        self._start_patroni(node)

        def rejoined():
            members = {m["name"]: m for m in self.members()}
            m = members.get(node)
            if not m or m.get("state") not in ("running", "streaming"):
                return None
            want = ("sync_standby",) if len(self.names) == 2 else ("sync_standby", "replica")
            return m.get("role") in want and self.routed_to(self.direct_url(node)) == (self.pg_port[node], True)

        wait_for(f"{node} rejoins as a replica", rejoined, timeout)
        return round(time.time() - t0, 2)

    def switchover(self, candidate=None, method="rest", timeout=60):
        """A clean switchover from the current leader to `candidate` (default:
        the sync standby), through the REST API (`POST /switchover`) or
        `patronictl switchover --force`. Waits until HAProxy routes to the
        new leader. Returns {"from", "to", "at", "done_s"}."""
        leader = self.leader()
        if leader is None:
            raise RuntimeError("no leader")
        if candidate is None:
            candidate = next((m["name"] for m in self.members() if m.get("role") == "sync_standby"), None)
            if candidate is None:
                raise RuntimeError("no sync standby to switch over to")
        t = time.time()
        if method == "rest":
            status, body = http(
                "POST", f"{self.rest_url(leader)}/switchover", {"leader": leader, "candidate": candidate}
            )
            if status != 200:
                raise RuntimeError(f"switchover refused: {status} {body!r}")
        else:
            done = subprocess.run(
                ["patronictl", "-c", self.config_path(leader), "switchover",
                 "--leader", leader, "--candidate", candidate, "--force"],
                capture_output=True, text=True, timeout=timeout,
            )
            if done.returncode != 0:
                raise RuntimeError(f"patronictl switchover failed: {done.stdout} {done.stderr}")
        wait_for(
            f"{candidate} leads and HAProxy routes to it",
            lambda: self.leader() == candidate and self.routed_to() == (self.pg_port[candidate], False),
            timeout,
        )
        return {"from": leader, "to": candidate, "at": t, "done_s": round(time.time() - t, 2)}

    def set_failsafe(self, on):
        """failsafe_mode in the dynamic configuration (needs etcd up);
        waits until every running node reports it."""
        status, body = self._patch_config({"failsafe_mode": bool(on)})
        if status != 200:
            raise RuntimeError(f"PATCH /config: {status} {body!r}")

        def applied():
            for n in self.names:
                if self._running(n):
                    cfg = get_json(f"{self.rest_url(n)}/config")[1] or {}
                    if bool(cfg.get("failsafe_mode")) != bool(on):
                        return False
            return True

        wait_for("failsafe_mode applied", applied, 30)
        # every node's HA loop has to pick it up from the DCS too
        time.sleep(3 * self.loop_wait + 1)
        self.failsafe = bool(on)

    def _patch_config(self, patch):
        node = self.leader() or self.names[0]
        req = urllib.request.Request(
            f"{self.rest_url(node)}/config", data=json.dumps(patch).encode(), method="PATCH",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as a:
                return a.status, a.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def patronictl(self, *args):
        done = subprocess.run(
            ["patronictl", "-c", self.config_path(self.names[0]), *args], capture_output=True, text=True, timeout=60
        )
        return done.stdout + done.stderr

    # ---- the application's database

    def _create_app_database(self):
        admin = self.admin_url()
        ok, _, err = psql(admin, f"CREATE ROLE {APP_USER} LOGIN CREATEDB PASSWORD '{APP_PASSWORD}'")
        if not ok:
            raise RuntimeError(f"create role: {err}")
        ok, _, err = psql(admin, f"CREATE DATABASE {APP_DB} OWNER {APP_USER}")
        if not ok:
            raise RuntimeError(f"create database: {err}")


# --- the selftest ------------------------------------------------------------


PROBE_TABLE = "CREATE TABLE ha_probe (id bigint PRIMARY KEY, via text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())"


class Probes:
    """Write probes (probe.py under /usr/bin/python3), one per (via, mode),
    each writing JSON lines; started and stopped by pid."""

    def __init__(self, work, targets):
        self.work, self.procs, self.files = work, [], {}
        for k, (via, mode, url, interval) in enumerate(targets, start=1):
            path = os.path.join(work, f"probe-{via}-{mode}.jsonl")
            self.files[(via, mode)] = path
            proc = subprocess.Popen(
                ["/usr/bin/python3", os.path.join(HERE, "probe.py"), url, via, mode, str(k * 10**9), str(interval), path],
                stdout=subprocess.DEVNULL, stderr=open(path + ".err", "w"),
            )
            self.procs.append(proc)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def records(self):
        out = {}
        for key, path in self.files.items():
            recs = []
            if os.path.exists(path):
                with open(path) as f:
                    for line in f:
                        try:
                            recs.append(json.loads(line))
                        except ValueError:
                            pass
            out[key] = recs
        return out


def analyse(records, t_event, t_until):
    """What each probe saw from t_event to t_until: the longest gap between
    two acknowledged writes that spans the event (the pause), the first
    acknowledged write after the event, the errors (kind, count, when
    relative to the event), and the slowest attempt."""
    result = {}
    for (via, mode), recs in records.items():
        window = [r for r in recs if r["t1"] >= t_event - 2 and r["t0"] <= t_until]
        oks = sorted(r["t1"] for r in window if r.get("ok"))
        before = [t for t in oks if t <= t_event]
        after = [t for t in oks if t > t_event]
        last_before = before[-1] if before else None
        pause = None
        for a, b in zip(oks, oks[1:]):
            if b > t_event and (pause is None or b - a > pause):
                if a >= t_event - 2:
                    pause = b - a
        errors = {}
        for r in window:
            if r.get("ok") or r["t1"] < t_event:
                continue
            key = f"{r.get('phase')}: {r.get('sqlstate') or '-'} {r.get('err', '')[:140]}"
            e = errors.setdefault(key, {"count": 0, "first_s": None, "last_s": None, "max_attempt_s": 0})
            e["count"] += 1
            rel = round(r["t1"] - t_event, 2)
            e["first_s"] = rel if e["first_s"] is None else e["first_s"]
            e["last_s"] = rel
            e["max_attempt_s"] = max(e["max_attempt_s"], round(r["t1"] - r["t0"], 2))
        slowest = max(window, key=lambda r: r["t1"] - r["t0"], default=None)
        result[f"{via}/{mode}"] = {
            "pause_s": round(pause, 2) if pause is not None else None,
            "first_ok_after_s": round(after[0] - t_event, 2) if after else None,
            "last_ok_before_s": round(last_before - t_event, 2) if last_before else None,
            "slowest_attempt_s": round(slowest["t1"] - slowest["t0"], 2) if slowest else None,
            "slowest_attempt_ok": slowest.get("ok") if slowest else None,
            "errors": errors,
        }
    return result


def check_rows(cluster, records, leader):
    """Every acknowledged INSERT is on `leader`; count the unknown ones."""
    ok, out, err = psql(cluster.direct_url(leader), "SELECT id FROM ha_probe", 60)
    if not ok:
        raise SystemExit(f"FAIL: reading ha_probe on {leader}: {err}")
    present = {int(x) for x in out.split()}
    acked, unknown = set(), set()
    for recs in records.values():
        for r in recs:
            if r.get("ok"):
                acked.add(r["id"])
            elif r.get("phase") == "insert" and not r.get("sqlstate"):
                unknown.add(r["id"])
    lost = sorted(acked - present)
    return {
        "acknowledged": len(acked),
        "present": len(present),
        "lost_acknowledged": lost[:20],
        "lost_count": len(lost),
        "unknown_outcome": len(unknown),
        "unknown_committed": len(unknown & present),
    }


def replica_write_check(cluster):
    """What a client sees writing to a replica, and how to tell it is one."""
    url = cluster.replica_url
    res = {}
    ok, out, err = psql(url, "INSERT INTO ha_probe (id, via) VALUES (-1, 'replica')")
    res["insert"] = err.splitlines()[0] if err else out
    res["show_transaction_read_only"] = psql(url, "SHOW transaction_read_only")[1]
    res["pg_is_in_recovery"] = psql(url, "SELECT pg_is_in_recovery()")[1]
    res["default_transaction_read_only"] = psql(url, "SHOW default_transaction_read_only")[1]
    res["primary_show_transaction_read_only"] = psql(cluster.primary_url, "SHOW transaction_read_only")[1]
    res["primary_pg_is_in_recovery"] = psql(cluster.primary_url, "SELECT pg_is_in_recovery()")[1]
    return res


def settle(seconds):
    time.sleep(seconds)


def _failover_event(c, probes, name, kill):
    """After a kill: wait for another leader and for HAProxy to route to
    it, let the probes run on, then measure."""
    new = wait_for("a new leader", lambda: (lambda l: l if l and l != kill["node"] else None)(c.leader()), 90)
    t_elected = time.time()
    wait_for("HAProxy routes to the new leader", lambda: c.routed_to() == (c.pg_port[new], False), 60)
    t_routed = time.time()
    settle(5)
    ev = {
        "event": name, "from": kill["node"], "to": new,
        "leader_elected_s": round(t_elected - kill["at"], 2),
        "haproxy_routes_s": round(t_routed - kill["at"], 2),
        "probes": analyse(probes.records(), kill["at"], time.time()),
        "rows": check_rows(c, probes.records(), new),
    }
    say(f"{name}: {kill['node']} -> {new}, elected after {ev['leader_elected_s']} s, "
        f"HAProxy routes after {ev['haproxy_routes_s']} s")
    return ev


def _switchover_event(c, probes, method):
    sw = c.switchover(method=method)
    settle(5)
    ev = {
        "event": f"switchover ({method})", "from": sw["from"], "to": sw["to"], "done_s": sw["done_s"],
        "probes": analyse(probes.records(), sw["at"], time.time()),
        "rows": check_rows(c, probes.records(), sw["to"]),
    }
    say(f"switchover ({method}) {sw['from']} -> {sw['to']} in {sw['done_s']} s")
    c.wait_healthy(timeout=120)
    settle(2)
    return ev


def _watch_primary(c, node, t_from, seconds):
    """When `node` stopped answering GET /primary with 200 (None: never)."""
    while time.time() < t_from + seconds:
        if not c.is_primary(node):
            return time.time()
        time.sleep(0.2)
    return None


def selftest(args):
    install()
    try:
        import_check = subprocess.run(["/usr/bin/python3", "-c", "import psycopg2"], capture_output=True)
    except OSError:
        import_check = None
    if import_check is None or import_check.returncode != 0:
        raise SystemExit("FAIL: /usr/bin/python3 cannot import psycopg2 (python3-psycopg2 comes with patroni)")
    work = os.path.join(ROOT, "target", "ha", "selftest")
    report = {"settings": None, "events": []}
    t_start = time.time()
    with Cluster(work, nodes=2, pgbouncer=True, **_timing(args)) as c:
        report["settings"] = {
            "ttl": c.ttl, "loop_wait": c.loop_wait, "retry_timeout": c.retry_timeout,
            "synchronous_mode": True, "synchronous_mode_strict": False,
            "haproxy": "inter 1s fastinter 500ms downinter 1s rise 1 fall 2 on-marked-down shutdown-sessions",
            "pgbouncer": f"transaction; query_wait_timeout {c.query_wait_timeout}, "
                         "server_connect_timeout 3, server_login_retry 1",
        }
        report["bootstrap_s"] = c.timings["bootstrap_s"]
        print(json.dumps(c.describe()), flush=True)
        ok, _, err = psql(c.primary_url, PROBE_TABLE)
        if not ok:
            raise SystemExit(f"FAIL: create table: {err}")
        wait_for("the table is on the replica", lambda: psql(c.replica_url, "SELECT count(*) FROM ha_probe")[0], 30)
        report["replica_write"] = replica_write_check(c)
        say("a write on the replica:", report["replica_write"]["insert"])

        probes = Probes(work, [
            ("haproxy", "fresh", c.primary_url, 0.1),
            ("haproxy", "session", c.primary_url, 0.1),
            ("pgbouncer", "fresh", c.pgbouncer_url, 0.1),
            ("pgbouncer", "session", c.pgbouncer_url, 0.1),
            ("pgbouncer", "concurrent", c.pgbouncer_url, 0.2),
            ("pgbouncer", "psql", c.pgbouncer_url, 0.3),
        ])
        events = report["events"]
        try:
            settle(4)
            for round_ in (1, 2):
                # kill -9 the primary; bring it back as a replica
                kill = c.kill_primary()
                events.append(_failover_event(c, probes, f"kill -9 primary #{round_}", kill))
                rejoin = c.restart_node(kill["node"])
                c.wait_healthy(timeout=120)
                events.append({"event": f"restart killed node #{round_}", "node": kill["node"],
                               "rejoined_as_sync_standby_s": rejoin})
                say(f"{kill['node']} rejoined as sync standby in {rejoin} s")
                settle(3)
                # a clean switchover
                events.append(_switchover_event(c, probes, "rest" if round_ == 1 else "patronictl"))

            # etcd down, failsafe_mode off (Patroni's default): kept down
            # past pgbouncer's query_wait_timeout
            c.set_failsafe(False)
            leader = c.leader()
            t_down = c.stop_etcd()
            say("etcd killed (failsafe_mode off)")
            demoted = _watch_primary(c, leader, t_down, 60)
            settle(max(0.0, t_down + c.query_wait_timeout + 10 - time.time()))
            t_up = c.start_etcd()
            new_leader, _ = c.wait_healthy(timeout=120)
            t_healthy = time.time()
            settle(3)
            ev = {
                "event": "etcd down, failsafe_mode off", "leader": leader,
                "leader_stopped_answering_primary_s": round(demoted - t_down, 2) if demoted else None,
                "etcd_down_for_s": round(t_up - t_down, 2),
                "healthy_after_etcd_back_s": round(t_healthy - t_up, 2),
                "leader_after": new_leader,
                "probes": analyse(probes.records(), t_down, time.time()),
                "rows": check_rows(c, probes.records(), new_leader),
            }
            events.append(ev)
            say(f"etcd down (failsafe off): {leader} stopped being primary after "
                f"{ev['leader_stopped_answering_primary_s']} s; healthy {ev['healthy_after_etcd_back_s']} s "
                "after etcd came back")

            # etcd down, failsafe_mode on
            c.set_failsafe(True)
            leader = c.leader()
            t_down = c.stop_etcd()
            hold = 3 * c.ttl + 5
            say(f"etcd killed (failsafe_mode on); watching {leader} for {hold} s")
            demoted = _watch_primary(c, leader, t_down, hold)
            settle(max(0.0, t_down + hold - time.time()))
            t_up = c.start_etcd()
            new_leader, _ = c.wait_healthy(timeout=120)
            settle(3)
            ev = {
                "event": "etcd down, failsafe_mode on", "leader": leader,
                "leader_stopped_answering_primary_s": round(demoted - t_down, 2) if demoted else None,
                "etcd_down_for_s": round(t_up - t_down, 2),
                "leader_after": new_leader,
                "probes": analyse(probes.records(), t_down, t_up),
                "rows": check_rows(c, probes.records(), new_leader),
            }
            events.append(ev)
            say(f"etcd down (failsafe on): {leader} stopped being primary after "
                f"{ev['leader_stopped_answering_primary_s']} s (None: never)")
        finally:
            probes.stop()
        report["final_rows"] = check_rows(c, probes.records(), c.leader())
    report["total_s"] = round(time.time() - t_start, 1)
    with open(os.path.join(work, "selftest-report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print_report(report)
    failures = []
    lost = sum(e.get("rows", {}).get("lost_count", 0) for e in events) + report["final_rows"]["lost_count"]
    if lost:
        failures.append(f"{lost} acknowledged rows missing")
    fs_on = events[-1]
    if fs_on["leader_stopped_answering_primary_s"] is not None:
        failures.append("with failsafe_mode on the leader stopped being primary while etcd was down")
    if events[-2]["leader_stopped_answering_primary_s"] is None:
        failures.append("with failsafe_mode off the leader stayed primary while etcd was down")
    if failures:
        print(f"selftest: 0 passed, 1 failed: {'; '.join(failures)}")
        raise SystemExit(1)
    print(f"selftest: 1 passed, 0 failed ({report['total_s']} s; report in {work}/selftest-report.json)")


def print_report(report):
    print(f"bootstrap: {report['bootstrap_s']} s")
    print(f"replica write: {report['replica_write']}")
    for ev in report["events"]:
        head = {k: v for k, v in ev.items() if k not in ("probes", "rows")}
        print(f"\n== {json.dumps(head)}")
        if "rows" in ev:
            print(f"   rows: {ev['rows']}")
        for name, p in ev.get("probes", {}).items():
            print(f"   {name:18} pause {p['pause_s']} s, first ok after {p['first_ok_after_s']} s, "
                  f"slowest attempt {p['slowest_attempt_s']} s (ok={p['slowest_attempt_ok']})")
            for err, e in p["errors"].items():
                print(f"      {e['count']:4}x  {e['first_s']}..{e['last_s']} s (attempt <= {e['max_attempt_s']} s)  {err}")
    print(f"\nfinal rows: {report['final_rows']}")


def serve(args):
    install()
    work = args.work or os.path.join(ROOT, "target", "ha", "serve")
    stop = threading.Event()

    def on_signal(*_):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with Cluster(work, nodes=args.nodes, pgbouncer=args.pgbouncer, failsafe=not args.no_failsafe, **_timing(args)) as c:
        print(json.dumps(c.describe()), flush=True)
        while not stop.wait(1):
            pass
    say("stopped")


def _timing(args):
    return dict(ttl=args.ttl, loop_wait=args.loop_wait, retry_timeout=args.retry_timeout,
                query_wait_timeout=args.query_wait_timeout)


def _timing_options(p):
    p.add_argument("--ttl", type=int, default=10, help="Patroni leader lease (s)")
    p.add_argument("--loop-wait", type=int, default=1, help="Patroni HA loop period (s)")
    p.add_argument("--retry-timeout", type=int, default=4, help="Patroni DCS/PostgreSQL retry bound (s)")
    p.add_argument("--query-wait-timeout", type=int, default=20, help="pgbouncer query_wait_timeout (s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="start one cluster, print its URLs as one JSON line, run until interrupted")
    s.add_argument("--nodes", type=int, default=2)
    s.add_argument("--pgbouncer", action="store_true")
    s.add_argument("--no-failsafe", action="store_true", help="failsafe_mode: false (the leader demotes when etcd is lost)")
    s.add_argument("--work", help="work directory (default target/ha/serve)")
    _timing_options(s)
    t = sub.add_parser("selftest", help="failover, switchover and etcd-loss measurements")
    _timing_options(t)
    sub.add_parser("install", help="apt-get install the packages if a binary is missing")
    args = parser.parse_args()
    if args.cmd == "serve":
        serve(args)
    elif args.cmd == "selftest":
        selftest(args)
    else:
        install()


if __name__ == "__main__":
    main()
