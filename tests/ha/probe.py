"""A write probe for tests/ha/cluster.py's selftest: INSERTs one row after
another into `ha_probe` and writes one JSON line per attempt (what was
tried, when, and what the client saw), until SIGTERM.

It runs under the Debian interpreter (/usr/bin/python3) because psycopg2
comes with the `patroni` package (python3-psycopg2); cluster.py itself
uses only the standard library and psql.

    /usr/bin/python3 probe.py URL VIA MODE FIRST_ID INTERVAL OUT

MODE `fresh`: a new connection per INSERT, one at a time (a pool that
reconnects); `session`: one connection kept as long as it works,
reconnected after it breaks (an idle pooled connection); `concurrent`: a
new connection per INSERT, each in its own thread, one started every
INTERVAL whether or not the earlier ones have finished (independent
requests arriving during an outage; at most 40 at once); `psql`: like
`fresh` but through the psql binary, whose libpq prints every message the
server or pooler sent before closing (psycopg2 2.9 reports pgbouncer's
FATAL 08P01 errors only as "server closed the connection unexpectedly").

Each line: id, via, t0/t1 (epoch seconds), ok, and on failure the phase
(`connect`: nothing was sent, the row cannot exist; `insert`: the outcome
is unknown unless the server answered with an error), the SQLSTATE (null
when the connection broke without an error message), the error class and
its text; on success the server port that answered.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import psycopg2

url, via, mode, first_id, interval, out_path = sys.argv[1:7]
interval = float(interval)
stopping = threading.Event()
write_lock = threading.Lock()
out = open(out_path, "a", buffering=1)


def stop(*_):
    stopping.set()


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)


def connect():
    conn = psycopg2.connect(
        url,
        connect_timeout=3,
        keepalives=1,
        keepalives_idle=2,
        keepalives_interval=1,
        keepalives_count=2,
        application_name=f"probe-{via}-{mode}",
    )
    conn.autocommit = True
    return conn


def attempt(n, conn, keep):
    """One INSERT; returns the connection to keep (or None)."""
    rec = {"id": n, "via": via, "mode": mode, "t0": time.time()}
    phase = "connect"
    try:
        if conn is None or conn.closed:
            conn = connect()
        phase = "insert"
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO ha_probe (id, via) VALUES (%s, %s) RETURNING inet_server_port()",
                (n, f"{via}-{mode}"),
            )
            rec["port"] = cur.fetchone()[0]
        rec["ok"] = True
    except psycopg2.Error as e:
        text = " | ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
        diag = getattr(e, "diag", None)
        rec.update(
            ok=False,
            phase=phase,
            sqlstate=e.pgcode or (diag.sqlstate if diag else None),
            cls=type(e).__name__,
            err=text[:300],
        )
        if diag is not None and diag.message_primary and diag.message_primary not in text:
            rec["err"] = (diag.message_primary + " | " + text)[:300]
        if conn is not None and (not keep or conn.closed):
            try:
                conn.close()
            except psycopg2.Error:
                pass
            conn = None
    if not keep and conn is not None:
        conn.close()
        conn = None
    rec["t1"] = time.time()
    with write_lock:
        out.write(json.dumps(rec) + "\n")
    return conn


def attempt_psql(n):
    rec = {"id": n, "via": via, "mode": mode, "t0": time.time()}
    sql = f"INSERT INTO ha_probe (id, via) VALUES ({n}, '{via}-{mode}') RETURNING inet_server_port()"
    env = dict(os.environ, PGCONNECT_TIMEOUT="3", PGAPPNAME=f"probe-{via}-{mode}")
    try:
        done = subprocess.run(
            ["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", "-d", url, "-c", sql],
            capture_output=True, text=True, timeout=60, env=env,
        )
        ok, out, err = done.returncode == 0, done.stdout.strip(), done.stderr.strip()
    except subprocess.TimeoutExpired:
        ok, out, err = False, "", "psql: no answer within 60 s"
    if ok:
        rec.update(ok=True, port=int(out.split()[0]))
    else:
        text = " | ".join(line.strip() for line in err.splitlines() if line.strip())
        m = re.search(r"(?:ERROR|FATAL):\s+([0-9A-Z]{5}):", err)
        # psql connects and runs in one go: an error that names the
        # connection attempt ("... failed:") came before the INSERT was sent
        phase = "connect" if re.search(r"connection to server .* failed", err) else "insert"
        rec.update(ok=False, phase=phase, sqlstate=m.group(1) if m else None, cls="psql", err=text[:300])
    rec["t1"] = time.time()
    with write_lock:
        out_file_write(rec)


def out_file_write(rec):
    out.write(json.dumps(rec) + "\n")


n = int(first_id)
conn = None
threads = []
while not stopping.is_set():
    n += 1
    if mode == "concurrent":
        threads = [t for t in threads if t.is_alive()]
        if len(threads) < 40:
            t = threading.Thread(target=attempt, args=(n, None, False), daemon=True)
            t.start()
            threads.append(t)
    elif mode == "psql":
        attempt_psql(n)
    else:
        conn = attempt(n, conn, mode == "session")
    stopping.wait(interval)
for t in threads:
    t.join(timeout=35)
