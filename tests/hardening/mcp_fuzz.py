#!/usr/bin/env python3
"""Hostile and careless clients against a running server's MCP endpoint.

Python standard library only. Every probe is sent on its own connection,
byte for byte as written here (so duplicate headers and broken chunked
framing really reach the server), and judged against what /mcp must answer:

- never a 5xx, and always an answer;
- either a JSON-RPC error object
  ({"jsonrpc":"2.0","id":...,"error":{"code":int,"message":str}}) with the
  status and code the probe expects, or, for a tools/call that reached a
  tool, a tool result with isError true and structuredContent (a read
  tool: the same problem as JSON text) saying
  `invalid` and naming the argument;
- never application/problem+json, the 401 of authentication included;
- for every create probe that was refused, a valid create_ticket with the
  same operation_id afterwards answers `created`: the refusal left the key
  unused.

Then the server's log (--server-log) must not mention a panic.

Usage: mcp_fuzz.py --url http://127.0.0.1:PORT --token TOKEN [--server-log FILE]
Prints one line per probe (verdict, name, HTTP status, what was seen) and
`N passed, N failed`; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

PROTOCOL_VERSION = "2025-11-25"
BODY_LIMIT = 64 * 1024
TIMEOUT_SECS = 10.0  # per connection; the whole run is bounded by --budget-secs

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


# --------------------------------------------------------------------------
# Raw HTTP/1.1, one request per connection.


@dataclass
class Response:
    status: int  # 0: no answer at all
    headers: list[tuple[str, str]]
    body: bytes
    note: str = ""

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def content_type(self) -> str:
        return (self.header("content-type") or "").split(";")[0].strip().lower()

    def json(self):
        """The body as JSON (the first `data:` event of an SSE body)."""
        body = self.body
        if self.content_type() == "text/event-stream":
            for line in body.decode("utf-8", "replace").splitlines():
                if line.startswith("data:") and line[5:].strip():
                    return json.loads(line[5:])
            raise ValueError("no data event in the event stream")
        return json.loads(body)


class Connection:
    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT_SECS)
        self.buf = b""

    def send(self, data: bytes) -> str:
        try:
            self.sock.sendall(data)
            return ""
        except OSError as e:  # the server may answer and close before reading all
            return f"send stopped: {e.__class__.__name__}"

    def half_close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _more(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _take_line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if not self._more():
                raise EOFError("connection closed mid-line")
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._more():
                raise EOFError("connection closed mid-body")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self) -> Response:
        while True:
            status_line = self._take_line().decode("latin-1")
            parts = status_line.split(" ", 2)
            status = int(parts[1])
            headers = []
            while True:
                line = self._take_line().decode("latin-1")
                if not line:
                    break
                name, _, value = line.partition(":")
                headers.append((name.strip(), value.strip()))
            if 100 <= status < 200:  # 100 Continue and friends: read on
                continue
            break
        resp = Response(status, headers, b"")
        te = (resp.header("transfer-encoding") or "").lower()
        if "chunked" in te:
            body = b""
            while True:
                size = int(self._take_line().split(b";")[0], 16)
                if size == 0:
                    while self._take_line():
                        pass
                    break
                body += self._take(size)
                self._take_line()
            resp.body = body
        elif resp.header("content-length") is not None:
            resp.body = self._take(int(resp.header("content-length")))
        else:
            while self._more():
                pass
            resp.body, self.buf = self.buf, b""
        return resp

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def exchange(host: str, port: int, data: bytes, half_close: bool = False) -> Response:
    try:
        conn = Connection(host, port)
    except OSError as e:
        return Response(0, [], b"", f"cannot connect: {e}")
    try:
        note = conn.send(data)
        if half_close:
            conn.half_close()
        try:
            resp = conn.read_response()
            resp.note = note
            return resp
        except (OSError, EOFError, ValueError, IndexError) as e:
            return Response(0, [], b"", f"no answer: {e.__class__.__name__}: {e}; {note}".strip("; "))
    finally:
        conn.close()


# --------------------------------------------------------------------------
# Requests.


@dataclass
class Target:
    host: str
    port: int
    token: str

    @property
    def host_header(self) -> str:
        return f"{self.host}:{self.port}"


def std_headers(t: Target) -> list[tuple[str, str]]:
    return [
        ("Host", t.host_header),
        ("Authorization", f"Bearer {t.token}"),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", PROTOCOL_VERSION),
        ("Connection", "close"),
    ]


@dataclass
class Req:
    """A request: standard headers with `set` replacing (None: removing)
    and `add` appending (duplicates), and a body sent with Content-Length,
    chunked, or as raw bytes after the head (`raw_body`)."""

    method: str = "POST"
    path: str = "/mcp"
    body: bytes = b""
    set: dict[str, str | None] = field(default_factory=dict)
    add: list[tuple[str, str]] = field(default_factory=list)
    chunked: bool = False
    raw_body: bytes | None = None  # sent as is, with Transfer-Encoding: chunked
    content_length: int | None = None  # announce this instead of len(body)
    half_close: bool = False

    def encode(self, t: Target) -> bytes:
        headers = []
        replaced = {k.lower(): v for k, v in self.set.items()}
        for name, value in std_headers(t):
            if name.lower() in replaced:
                v = replaced.pop(name.lower())
                if v is not None:
                    headers.append((name, v))
            else:
                headers.append((name, value))
        for name, value in self.set.items():
            if name.lower() in replaced and value is not None:
                headers.append((name, value))
        headers.extend(self.add)
        if self.raw_body is not None or self.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        else:
            n = len(self.body) if self.content_length is None else self.content_length
            if self.method != "GET" or n:
                headers.append(("Content-Length", str(n)))
        head = f"{self.method} {self.path} HTTP/1.1\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        data = head.encode("latin-1")
        if self.raw_body is not None:
            return data + self.raw_body
        if self.chunked:
            out = b""
            step = 8192
            for i in range(0, len(self.body), step):
                piece = self.body[i : i + step]
                out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            return data + out + b"0\r\n\r\n"
        if self.content_length is not None and self.content_length > len(self.body):
            return data + self.body  # announced, never sent
        return data + self.body


def rpc(method, params=None, id_=1, **extra) -> dict:
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    msg.update(extra)
    return msg


def call(tool: str, arguments, id_=1) -> dict:
    return rpc("tools/call", {"name": tool, "arguments": arguments}, id_)


def dumps(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def key() -> str:
    return f"fuzz-{uuid.uuid4()}"


def create_args(op_id, title="fuzz probe", **more) -> dict:
    args = {"operation_id": op_id, "project_id": "fuzz", "title": title}
    args.update(more)
    return args


# --------------------------------------------------------------------------
# Verdicts. A check returns None when the answer is right, else why not.


Check = Callable[[Response], "str | None"]


def common(resp: Response) -> str | None:
    if resp.status == 0:
        return resp.note or "no answer"
    if resp.status >= 500:
        return f"server error {resp.status}: {resp.body[:300]!r}"
    if resp.content_type() == "application/problem+json":
        return f"a REST problem document on /mcp ({resp.status}): {resp.body[:200]!r}"
    return None


def as_rpc_error(resp: Response) -> tuple[dict | None, str | None]:
    try:
        doc = resp.json()
    except (ValueError, UnicodeDecodeError) as e:
        ct = resp.header("content-type")
        return None, f"body is not JSON ({ct}): {resp.body[:200]!r} ({e.__class__.__name__})"
    if not isinstance(doc, dict):
        return None, f"body is not a JSON-RPC object: {str(doc)[:200]}"
    err = doc.get("error")
    if (
        doc.get("jsonrpc") != "2.0"
        or "id" not in doc
        or not isinstance(err, dict)
        or not isinstance(err.get("code"), int)
        or isinstance(err.get("code"), bool)
        or not isinstance(err.get("message"), str)
    ):
        return None, f"not a JSON-RPC error object: {json.dumps(doc)[:300]}"
    return doc, None


def rpc_error(
    statuses: int | set[int] | None,
    codes: int | set[int] | None = None,
    says: list[str] | None = None,
    allow: bool = False,
) -> Check:
    statuses = {statuses} if isinstance(statuses, int) else statuses
    codes = {codes} if isinstance(codes, int) else codes

    def check(resp: Response) -> str | None:
        why = common(resp)
        if why:
            return why
        doc, why = as_rpc_error(resp)
        if why:
            return f"expected a JSON-RPC error: {why}"
        err = doc["error"]
        problems = []
        if statuses and resp.status not in statuses:
            problems.append(f"HTTP {resp.status}, expected {'/'.join(map(str, sorted(statuses)))}")
        if codes and err["code"] not in codes:
            problems.append(f"code {err['code']}, expected {'/'.join(map(str, sorted(codes)))}")
        text = (err["message"] + " " + json.dumps(err.get("data", ""))).lower()
        for word in says or []:
            if word.lower() not in text:
                problems.append(f"message does not say {word!r}")
        if allow and "post" not in (resp.header("allow") or "").lower():
            problems.append(f"Allow header {resp.header('allow')!r}, expected one listing POST")
        if problems:
            return "; ".join(problems) + f" ({err['code']}: {err['message'][:160]})"
        return None

    return check


def tool_result(resp: Response) -> tuple[dict | None, str | None]:
    why = common(resp)
    if why:
        return None, why
    try:
        doc = resp.json()
    except (ValueError, UnicodeDecodeError):
        return None, f"body is not JSON: {resp.body[:200]!r}"
    if not isinstance(doc, dict) or doc.get("jsonrpc") != "2.0":
        return None, f"not a JSON-RPC response: {str(doc)[:200]}"
    if "error" in doc:
        err = doc["error"]
        return None, f"JSON-RPC error {err.get('code')}: {str(err.get('message'))[:200]}"
    result = doc.get("result")
    if resp.status != 200 or not isinstance(result, dict):
        return None, f"HTTP {resp.status}, no result: {json.dumps(doc)[:200]}"
    return result, None


def tool_invalid(argument: str) -> Check:
    def check(resp: Response) -> str | None:
        result, why = tool_result(resp)
        if why:
            return f"expected a tool result saying invalid: {why}"
        sc = result.get("structuredContent")
        if result.get("isError") is not True:
            return f"isError is {result.get('isError')!r}: {json.dumps(result)[:200]}"
        if sc is None:
            # A read tool's problem goes as JSON text only (its output
            # schema describes what it reads, which a problem is not).
            content = result.get("content") or []
            text = content[0].get("text") if content and isinstance(content[0], dict) else None
            try:
                sc = json.loads(text) if isinstance(text, str) else None
            except ValueError:
                sc = None
        if not isinstance(sc, dict):
            text = json.dumps(result.get("content"))[:200]
            return f"neither structuredContent nor a JSON problem as text (content: {text})"
        if sc.get("status") != "invalid" and sc.get("error") != "invalid":
            return f"structuredContent does not say invalid: {json.dumps(sc)[:200]}"
        errors = sc.get("errors") or []
        named = any(
            isinstance(e, dict)
            and (e.get("field") == argument or argument in str(e.get("message", "")))
            for e in errors
        )
        if not named:
            return f"errors do not name {argument!r}: {json.dumps(errors)[:200]}"
        return None

    return check


def tool_ok(status: str) -> Check:
    def check(resp: Response) -> str | None:
        result, why = tool_result(resp)
        if why:
            return f"expected a tool result {status}: {why}"
        sc = result.get("structuredContent") or {}
        if result.get("isError") or sc.get("status") != status:
            return f"expected status {status}: {json.dumps(result)[:240]}"
        return None

    return check


def tools_listed(resp: Response) -> str | None:
    result, why = tool_result(resp)
    if why:
        return why
    names = sorted(t.get("name") for t in result.get("tools", []))
    return None if "create_ticket" in names else f"tools/list without create_ticket: {names}"


def unauthorized(resp: Response) -> str | None:
    if resp.status != 401:
        return f"HTTP {resp.status}, expected 401"
    if not (resp.header("www-authenticate") or "").lower().startswith("bearer"):
        return "no WWW-Authenticate: Bearer"
    return common(resp)


def created_by(resp: Response) -> bool:
    """Whether this answer is a create that went through."""
    try:
        doc = resp.json()
        sc = doc["result"]["structuredContent"]
        return sc.get("status") in ("created", "replayed")
    except Exception:
        return False


# --------------------------------------------------------------------------
# The probes.


@dataclass
class Probe:
    name: str
    req: Req
    check: Check
    keys: list[str] = field(default_factory=list)  # create keys to re-use after a refusal


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def probes(t: Target) -> list[Probe]:
    ps: list[Probe] = []

    def add(name, req, check, keys=()):
        ps.append(Probe(name, req, check, list(keys)))

    def body(msg) -> bytes:
        return dumps(msg)

    # Controls: the harness speaks MCP the server understands.
    add("control: tools/list", Req(body=body(rpc("tools/list"))), tools_listed)
    add("control: create_ticket", Req(body=body(call("create_ticket", create_args(key())))), tool_ok("created"))
    add("control: no token -> 401 problem", Req(body=body(rpc("tools/list")), set={"Authorization": None}), unauthorized)
    add("control: bad token -> 401 problem", Req(body=body(rpc("tools/list")), set={"Authorization": "Bearer tkt_wrong"}), unauthorized)

    # Not JSON: -32700, HTTP 400.
    k = key()
    truncated = body(call("create_ticket", create_args(k)))[:-7]
    add("malformed JSON (a create cut short)", Req(body=truncated), rpc_error(400, PARSE_ERROR), [k])
    add("malformed JSON (garbage)", Req(body=b'{"jsonrpc":"2.0",'), rpc_error(400, PARSE_ERROR))
    add("malformed JSON (not UTF-8)", Req(body=b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}'), rpc_error(400, PARSE_ERROR))
    add("empty body", Req(body=b""), rpc_error(400, PARSE_ERROR))

    # JSON, but not one JSON-RPC request: -32600, HTTP 400.
    for name, raw in [
        ("null", b"null"),
        ("a number", b"42"),
        ("a string", b'"tools/list"'),
        ("[]", b"[]"),
        ("missing jsonrpc", body({"id": 1, "method": "tools/list"})),
        ('jsonrpc "1.0"', body({"jsonrpc": "1.0", "id": 1, "method": "tools/list"})),
        ("jsonrpc 2.0 as a number", b'{"jsonrpc":2.0,"id":1,"method":"tools/list"}'),
        ("id null", body(rpc("tools/list", id_=None))),
        ("id an object", body(rpc("tools/list", id_={"a": 1}))),
        ("id a float", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}'),
        ("id 40 digits", b'{"jsonrpc":"2.0","id":1234567890123456789012345678901234567890,"method":"tools/list"}'),
        ("id true", body(rpc("tools/list", id_=True))),
        ("method a number", body({"jsonrpc": "2.0", "id": 1, "method": 7})),
        ("method missing", body({"jsonrpc": "2.0", "id": 1})),
    ]:
        add(f"not a JSON-RPC request: {name}", Req(body=raw), rpc_error(400, INVALID_REQUEST))
    k1, k2 = key(), key()
    batch2 = [call("create_ticket", create_args(k1), 1), call("create_ticket", create_args(k2), 2)]
    add("batch of 2 creates", Req(body=body(batch2)), rpc_error(400, INVALID_REQUEST), [k1, k2])
    batch1000 = b"[" + b",".join(body(rpc("ping", id_=i)) for i in range(1000)) + b"]"
    add("batch of 1,000 pings", Req(body=batch1000), rpc_error(400, INVALID_REQUEST))
    add(
        "duplicate keys (method twice)",
        Req(body=b'{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}'),
        rpc_error(400, {INVALID_REQUEST, PARSE_ERROR}),
    )
    k = key()
    deep = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"operation_id":"'
        + k.encode()
        + b'","project_id":"fuzz","title":"deep","description":'
        + nested(10_000).encode()
        + b"}}}"
    )
    add("10k-deep nesting in arguments", Req(body=deep), rpc_error(400, {PARSE_ERROR, INVALID_REQUEST}), [k])
    deep_meta = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":' + nested(10_000).encode() + b"}}}"
    add("10k-deep nesting in _meta", Req(body=deep_meta), rpc_error(400, {PARSE_ERROR, INVALID_REQUEST}))

    # Params of the wrong shape: -32602 (HTTP 200 or 400).
    k = key()
    add("params an array", Req(body=body(rpc("tools/call", ["create_ticket", create_args(k)]))), rpc_error({200, 400}, INVALID_PARAMS), [k])
    add("params a string", Req(body=body(rpc("tools/list", "all"))), rpc_error({200, 400}, INVALID_PARAMS))
    add("tools/call arguments a string", Req(body=body(call("create_ticket", "oops"))), rpc_error({200, 400}, INVALID_PARAMS))
    add("tools/call arguments an array", Req(body=body(call("create_ticket", [key(), "fuzz", "t"]))), rpc_error({200, 400}, INVALID_PARAMS))
    add("tools/call without a name", Req(body=body(rpc("tools/call", {"arguments": {}}))), rpc_error({200, 400}, INVALID_PARAMS))
    add("initialize without params", Req(body=body(rpc("initialize"))), rpc_error({200, 400}, INVALID_PARAMS))

    # Tool arguments of the wrong type, unknown ones, odd text: the tool's
    # own `invalid` result, naming the argument.
    n = random.randrange(10**11, 10**12)
    add("create_ticket operation_id: a number", Req(body=body(call("create_ticket", create_args(n)))), tool_invalid("operation_id"), [str(n)])
    k = key()
    add("create_ticket title: 5", Req(body=body(call("create_ticket", create_args(k, title=5)))), tool_invalid("title"), [k])
    k = key()
    add("create_ticket description: an array", Req(body=body(call("create_ticket", create_args(k, description=["a"])))), tool_invalid("description"), [k])
    k = key()
    add("create_ticket unknown argument tenant", Req(body=body(call("create_ticket", create_args(k, tenant="globex")))), tool_invalid("tenant"), [k])
    k = key()
    add("create_ticket NUL in title", Req(body=body(call("create_ticket", create_args(k, title="nul\u0000title")))), tool_invalid("title"), [k])
    k = key()
    add("create_ticket NUL in description", Req(body=body(call("create_ticket", create_args(k, description="a\u0000b")))), tool_invalid("description"), [k])
    add("create_ticket non-ASCII operation_id", Req(body=body(call("create_ticket", create_args("schlüssel-" + uuid.uuid4().hex)))), tool_invalid("operation_id"))
    add("create_ticket NUL in operation_id", Req(body=body(call("create_ticket", create_args("nul\u0000" + uuid.uuid4().hex)))), tool_invalid("operation_id"))
    add(
        "create_ticket unicode title (valid)",
        Req(body=body(call("create_ticket", create_args(key(), title="Überlauf ✓ 🚀 日本語 עברית \u200b")))),
        tool_ok("created"),
    )
    for name, value in [("-1", -1), ("1.5", 1.5), ('"5"', "5")]:
        add(f"list_tickets limit: {name}", Req(body=body(call("list_tickets", {"limit": value}))), tool_invalid("limit"))
    add("list_tickets limit: 1e12", Req(body=b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tickets","arguments":{"limit":1e12}}}'), tool_invalid("limit"))
    add("list_tickets unknown argument", Req(body=body(call("list_tickets", {"tenant": "globex"}))), tool_invalid("tenant"))
    add("get_ticket ticket_id: 1", Req(body=body(call("get_ticket", {"ticket_id": 1}))), tool_invalid("ticket_id"))
    add("get_operation_status operation_id: a number", Req(body=body(call("get_operation_status", {"operation_id": 12345678}))), tool_invalid("operation_id"))
    add("get_operation_status unknown argument", Req(body=body(call("get_operation_status", {"operation_id": key(), "verbose": True}))), tool_invalid("verbose"))

    # Size and framing.
    k = key()
    huge = body(call("create_ticket", create_args(k, description="x" * (BODY_LIMIT + 4096))))
    add("body over 64 KiB (Content-Length)", Req(body=huge), rpc_error(413), [k])
    k = key()
    huge = body(call("create_ticket", create_args(k, description="x" * (BODY_LIMIT + 4096))))
    add("body over 64 KiB (chunked)", Req(body=huge, chunked=True), rpc_error(413), [k])
    add("Content-Length 1 GiB announced, not sent", Req(body=b"{", content_length=1 << 30), rpc_error(413))
    k = key()
    good = body(call("create_ticket", create_args(k)))
    add("chunked: size not hex", Req(raw_body=b"zz\r\n" + good + b"\r\n0\r\n\r\n"), rpc_error(400), [k])
    k = key()
    good = body(call("create_ticket", create_args(k)))
    add(
        "chunked: data longer than its size",
        Req(raw_body=f"{len(good) - 10:x}\r\n".encode() + good + b"\r\n0\r\n\r\n"),
        rpc_error(400),
        [k],
    )
    k = key()
    good = body(call("create_ticket", create_args(k)))
    add(
        "chunked: connection ends mid-chunk",
        Req(raw_body=f"{len(good) + 100:x}\r\n".encode() + good, half_close=True),
        rpc_error(400),
        [k],
    )

    # Who may call: Host, Origin, duplicates.
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add("foreign Host", Req(body=create, set={"Host": "tickets.example.com"}), rpc_error(403, says=["--mcp-allowed-hosts"]), [k])
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add("foreign Origin", Req(body=create, add=[("Origin", "http://evil.example")]), rpc_error(403, says=["origin"]), [k])
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add("Host with userinfo (evil@127.0.0.1)", Req(body=create, set={"Host": f"evil@{t.host_header}"}), rpc_error({400, 403}), [k])
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add("duplicate Host", Req(body=create, add=[("Host", "evil.example")]), rpc_error(400, says=["host"]), [k])
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add(
        "duplicate Origin",
        Req(body=create, add=[("Origin", "http://localhost"), ("Origin", "http://evil.example")]),
        rpc_error(400, says=["origin"]),
        [k],
    )
    k = key()
    create = body(call("create_ticket", create_args(k)))
    add("duplicate Authorization", Req(body=create, add=[("Authorization", "Bearer tkt_someone_else")]), rpc_error(400, says=["authorization"]), [k])

    # Protocol version, Accept, Content-Type, Content-Encoding.
    for version in ["banana", "1999-01-01", "2099-01-01"]:
        k = key()
        add(
            f"MCP-Protocol-Version {version}",
            Req(body=body(call("create_ticket", create_args(k))), set={"MCP-Protocol-Version": version}),
            rpc_error(400, says=["version"]),
            [k],
        )
    k = key()
    add("Accept: text/html", Req(body=body(call("create_ticket", create_args(k))), set={"Accept": "text/html"}), rpc_error(406, says=["accept"]), [k])
    k = key()
    add("Content-Type: text/plain", Req(body=body(call("create_ticket", create_args(k))), set={"Content-Type": "text/plain"}), rpc_error(415, says=["content-type"]), [k])
    k = key()
    add("no Content-Type", Req(body=body(call("create_ticket", create_args(k))), set={"Content-Type": None}), rpc_error(415, says=["content-type"]), [k])
    add(
        "Content-Encoding: gzip (a real gzip body)",
        Req(body=gzip.compress(body(call("create_ticket", create_args(key())))), add=[("Content-Encoding", "gzip")]),
        tool_ok("created"),
    )
    k = key()
    add(
        "Content-Encoding: gzip (corrupt)",
        Req(body=b"\x1f\x8b\x08\x00garbage" + body(call("create_ticket", create_args(k))), add=[("Content-Encoding", "gzip")]),
        rpc_error(400),
        [k],
    )
    k = key()
    bomb = gzip.compress(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"operation_id":"' + k.encode() + b'","project_id":"fuzz","title":"bomb","description":"' + b"x" * (4 << 20) + b'"}}}')
    add("Content-Encoding: gzip (decodes to 4 MiB)", Req(body=bomb, add=[("Content-Encoding", "gzip")]), rpc_error(413), [k])
    k = key()
    add(
        "Content-Encoding: br",
        Req(body=body(call("create_ticket", create_args(k))), add=[("Content-Encoding", "br")]),
        rpc_error(415, says=["content-encoding"]),
        [k],
    )

    # Methods a stateless server does not serve.
    for method in ["GET", "DELETE", "PUT"]:
        add(
            f"{method} /mcp",
            Req(method=method, body=b"", set={"Accept": "application/json, text/event-stream", "Content-Type": None}),
            rpc_error(405, allow=True),
        )
    return ps


# --------------------------------------------------------------------------


def follow_up(t: Target, op_id: str, probe: str) -> str | None:
    """A valid create with the refused probe's operation_id must be `created`."""
    msg = call("create_ticket", create_args(op_id, title=f"follow-up of {probe}"[:200]))
    resp = exchange(t.host, t.port, Req(body=dumps(msg)).encode(t))
    why = tool_ok("created")(resp)
    return None if why is None else f"follow-up create with operation_id {op_id}: {why}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--token", required=True)
    ap.add_argument("--server-log", help="the server's log, checked for panics at the end")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--budget-secs", type=float, default=180.0, help="probes not sent by then fail")
    opts = ap.parse_args()
    deadline = time.monotonic() + opts.budget_secs
    random.seed(opts.seed)
    url = urlsplit(opts.url)
    t = Target(url.hostname or "127.0.0.1", url.port or 80, opts.token)

    passed = failed = 0
    for p in probes(t):
        if time.monotonic() > deadline:
            failed += 1
            print(f"FAIL  {p.name:48} not sent: the {opts.budget_secs:.0f} s budget ran out")
            continue
        resp = exchange(t.host, t.port, p.req.encode(t), p.req.half_close)
        why = p.check(resp)
        followed = ""
        if not created_by(resp) and p.keys:
            followed = "  (its operation_id then created a ticket)"
            for k in p.keys:
                extra = follow_up(t, k, p.name)
                if extra:
                    why = f"{why}; {extra}" if why else extra
        shown = resp.status if resp.status else "---"
        if why is None:
            passed += 1
            print(f"PASS  {p.name:48} HTTP {shown}{followed}")
        else:
            failed += 1
            print(f"FAIL  {p.name:48} HTTP {shown}  {why}")
        sys.stdout.flush()

    if opts.server_log:
        with open(opts.server_log, encoding="utf-8", errors="replace") as f:
            panics = [line.rstrip() for line in f if "panic" in line.lower()]
        if panics:
            failed += 1
            print(f"FAIL  {'server log has no panic':48} {len(panics)} line(s): {panics[0][:200]}")
        else:
            passed += 1
            print(f"PASS  {'server log has no panic':48}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
