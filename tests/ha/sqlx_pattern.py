#!/usr/bin/env python3
"""Does sqlx's way of running a query survive pgbouncer's transaction pooling?

sqlx-postgres 0.9 runs a query with arguments in two round trips: Parse +
Describe + Sync (it waits for ReadyForQuery), then Bind + Execute + Close +
Sync. A named ("sqlx_s_N", persistent, the default) or unnamed statement
(`.persistent(false)`) is parsed on whichever server connection pgbouncer
lends for the first round trip; outside an explicit transaction the server
is idle after it, so pgbouncer may lend another one for the second.

This speaks the protocol itself (standard library only) from CLIENTS
threads, LOOPS queries each, and counts the outcomes:

    python3 tests/ha/sqlx_pattern.py PORT [--named] [--in-transaction] [--clients 40] [--loops 50]

PORT is pgbouncer's (or, for comparison, HAProxy's) port of a cluster
started with `cluster.py serve --pgbouncer`; user and database `tickets`,
trust auth. Exit status 0 whatever it finds: it reports.
"""

import argparse
import collections
import json
import socket
import struct
import threading


def msg(kind, body):
    return kind + struct.pack("!I", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


class Conn:
    def __init__(self, port, user, db):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""
        body = struct.pack("!I", 196608) + cstr("user") + cstr(user) + cstr("database") + cstr(db) + b"\0"
        self.sock.sendall(struct.pack("!I", len(body) + 4) + body)
        errors = self.until_ready()
        if errors:
            raise RuntimeError(errors)

    def read(self):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!I", self.buf[1:5])[0]:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("connection closed")
            self.buf += data
        n = struct.unpack("!I", self.buf[1:5])[0]
        kind, body = self.buf[:1], self.buf[5 : 1 + n]
        self.buf = self.buf[1 + n :]
        return kind, body

    def until_ready(self):
        """Messages up to ReadyForQuery; the errors among them as 'SQLSTATE message'."""
        errors = []
        while True:
            kind, body = self.read()
            if kind == b"E":
                fields = {x[:1].decode(): x[1:].decode() for x in body.split(b"\0") if x}
                errors.append(f"{fields.get('C', '?')} {fields.get('M', '')}")
            if kind == b"Z":
                return errors

    def simple(self, sql):
        self.sock.sendall(msg(b"Q", cstr(sql)))
        return self.until_ready()

    def sqlx_query(self, name, value):
        """sqlx's two round trips for `SELECT $1::int`."""
        sql = "SELECT $1::int"
        self.sock.sendall(
            msg(b"P", cstr(name) + cstr(sql) + struct.pack("!hI", 1, 23))
            + msg(b"D", b"S" + cstr(name))
            + msg(b"S", b"")
        )
        errors = self.until_ready()
        v = str(value).encode()
        self.sock.sendall(
            msg(b"B", cstr("") + cstr(name) + struct.pack("!hh", 0, 1) + struct.pack("!I", len(v)) + v + struct.pack("!h", 0))
            + msg(b"E", cstr("") + struct.pack("!I", 0))
            + msg(b"C", b"P" + cstr(""))
            + msg(b"S", b"")
        )
        return errors + self.until_ready()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("port", type=int)
    p.add_argument("--named", action="store_true", help="named statements sqlx_s_N (sqlx's default)")
    p.add_argument("--in-transaction", action="store_true", help="BEGIN/COMMIT around each query")
    p.add_argument("--clients", type=int, default=40)
    p.add_argument("--loops", type=int, default=50)
    p.add_argument("--user", default="tickets")
    p.add_argument("--db", default="tickets")
    a = p.parse_args()
    outcomes = collections.Counter()
    lock = threading.Lock()

    def client(k):
        conn = Conn(a.port, a.user, a.db)
        for i in range(a.loops):
            name = f"sqlx_s_{i + 1}" if a.named else ""
            errors = []
            if a.in_transaction:
                errors += conn.simple("BEGIN")
            errors += conn.sqlx_query(name, k * 100000 + i)
            if a.in_transaction:
                errors += conn.simple("COMMIT")
            with lock:
                # a statement name varies; count by SQLSTATE and shape
                outcomes.update([e.replace(f'"{name}"', '"<name>"') if name else e for e in errors] or ["ok"])

    threads = [threading.Thread(target=client, args=(k,)) for k in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"port": a.port, "named": a.named, "in_transaction": a.in_transaction,
                      "clients": a.clients, "loops": a.loops, "outcomes": dict(outcomes.most_common())}))


if __name__ == "__main__":
    main()
