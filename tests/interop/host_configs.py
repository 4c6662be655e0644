"""The README's MCP host configurations, started exactly as they say.

Finds every fenced JSON block that README.md marks with
`<!-- host-config: NAME -->` (exactly the four below, no more), replaces only
its placeholders (the binary's path, the database's path, the token, the
port), and starts the server as the host would: a stdio block with the
official Python SDK's `stdio_client` (its command, args and env as written,
from a folder of its own), an HTTP block with its `streamable_http_client`
(its url and headers as written, to a `tickets serve` this script starts).
Each then initializes, lists the tools, creates a ticket, meets a conflict
(whose failure record must reach the host in `_meta`) and reads the
operation's status.

Makes its own database (`tickets tenant create`, `tickets token issue`).
Needs TICKETS_BIN (run.sh sets it). Prints one PASS/FAIL line per check
and a total.
"""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
TICKETS = os.environ["TICKETS_BIN"]

# What each block is, and the placeholders it must contain.
EXPECTED = {
    "stdio-mcpServers": ("stdio", "mcpServers"),
    "stdio-vscode": ("stdio", "servers"),
    "http-mcpServers": ("http", "mcpServers"),
    "http-vscode": ("http", "servers"),
}
BINARY = "/path/to/tickets"
DATABASE = "/srv/tickets/data/tickets.db"
TOKEN = "tkt_…"
ADDRESS = "127.0.0.1:8080"
PLACEHOLDERS = {"stdio": (BINARY, DATABASE, TOKEN), "http": (ADDRESS, TOKEN)}

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from checks import check, finish, results  # noqa: E402


def blocks(text):
    """Every marked block: {name: its JSON text}. A marker must be followed by
    a ```json fence; a name may be used once."""
    found = {}
    for match in re.finditer(r"<!-- host-config: ([\w-]+) -->\n```json\n(.*?)\n```", text, re.S):
        name, body = match.group(1), match.group(2)
        check(f"[{name}] named once", name not in found)
        found[name] = body
    markers = re.findall(r"<!-- host-config: ([\w-]+) -->", text)
    check(
        "every marker is followed by a ```json block",
        len(markers) == len(found),
        f"markers {markers}, blocks {sorted(found)}",
    )
    return found


def substituted(name, body, kind, values):
    """The block with its placeholders replaced, each checked present."""
    for placeholder in PLACEHOLDERS[kind]:
        check(f"[{name}] has the placeholder {placeholder}", placeholder in body, body)
        body = body.replace(placeholder, values[placeholder])
    return json.loads(body)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tickets(database_url, *args):
    env = {**os.environ, "DATABASE_URL": database_url, "RUST_LOG": "warn"}
    return subprocess.run(
        [TICKETS, *args], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


async def use(name, session):
    """Initialize, list the tools, create a ticket, reuse its operation_id
    for another, and read its status."""
    init = await session.initialize()
    check(f"[{name}] initializes", init.server_info.name == "retry-safe-tickets", str(init.server_info))
    listed = await session.list_tools()
    names = {tool.name for tool in listed.tools}
    check(
        f"[{name}] lists the tools",
        {"create_ticket", "get_operation_status"} <= names,
        str(sorted(names)),
    )
    key = str(uuid.uuid4())
    made = await session.call_tool(
        "create_ticket", {"operation_id": key, "project_id": "hosts", "title": f"Via {name}"}
    )
    body = made.structured_content or {}
    check(f"[{name}] creates a ticket", body.get("status") == "created", str(made))
    # The same operation_id for another ticket: a conflict, whose failure
    # record (in `_meta`) reaches the host.
    conflict = await session.call_tool(
        "create_ticket", {"operation_id": key, "project_id": "hosts", "title": "Another"}
    )
    record = (conflict.meta or {}).get("retry-safe-tickets/failure") or {}
    check(
        f"[{name}] a conflict carries the failure record",
        conflict.is_error
        and record.get("code") == "conflict"
        and record.get("retryable") is False
        and record.get("operationId") == key,
        str(conflict.meta),
    )
    status = await session.call_tool("get_operation_status", {"operation_id": key})
    said = status.structured_content or {}
    check(
        f"[{name}] get_operation_status finds it",
        said.get("state") == "succeeded"
        and (said.get("ticket") or {}).get("id") == (body.get("ticket") or {}).get("id"),
        str(said),
    )


def typed(name, top, kind, config):
    """VS Code's `servers` names the transport; `mcpServers` may."""
    said = config.get("type") if top == "servers" else config.get("type", kind)
    check(f"[{name}] type {kind}", said == kind, str(config))


async def stdio(name, config, home):
    database_url = config["env"]["DATABASE_URL"]
    check(
        f"[{name}] DATABASE_URL is absolute",
        database_url.startswith("sqlite:/"),
        database_url,
    )
    check(
        f"[{name}] sets only DATABASE_URL and TICKETS_TOKEN",
        sorted(config["env"]) == ["DATABASE_URL", "TICKETS_TOKEN"],
        str(config["env"]),
    )
    # As a desktop host: the block's command, args and env as written, from
    # a folder of its own (where a relative database path would find nothing).
    params = StdioServerParameters(
        command=config["command"], args=config["args"], env=config["env"], cwd=home
    )
    with open(os.path.join(home, f"{name}.stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(
            read, write
        ) as session:
            await use(name, session)


async def http(name, config):
    async with httpx2.AsyncClient(
        headers=config["headers"], timeout=httpx2.Timeout(30.0)
    ) as client:
        async with streamable_http_client(config["url"], http_client=client) as (
            read,
            write,
        ), ClientSession(read, write) as session:
            await use(name, session)


async def main():
    with open(README, encoding="utf-8") as f:
        found = blocks(f.read())
    check(
        "the README marks exactly the four host configurations",
        sorted(found) == sorted(EXPECTED),
        str(sorted(found)),
    )

    with tempfile.TemporaryDirectory() as work:
        # The database, as the README says to make it; the host starts
        # elsewhere.
        database = os.path.join(work, "srv", "tickets.db")
        os.makedirs(os.path.dirname(database))
        home = os.path.join(work, "host")
        os.makedirs(home)
        database_url = f"sqlite:{database}"
        tickets(database_url, "tenant", "create", "acme")
        token = tickets(database_url, "token", "issue", "acme")
        port = free_port()
        values = {
            BINARY: TICKETS,
            DATABASE: database,
            TOKEN: token,
            ADDRESS: f"127.0.0.1:{port}",
        }
        server_log = open(os.path.join(work, "serve.log"), "w")
        server = subprocess.Popen(
            [TICKETS, "serve", "--listen", f"127.0.0.1:{port}"],
            env={**os.environ, "DATABASE_URL": database_url},
            stdout=subprocess.DEVNULL,
            stderr=server_log,
        )
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            for name, (kind, top) in EXPECTED.items():
                if name not in found:
                    continue
                try:
                    document = substituted(name, found[name], kind, values)
                    check(f"[{name}] is under {top}", list(document) == [top], str(list(document)))
                    config = document[top]["tickets"]
                    typed(name, top, kind, config)
                    if kind == "stdio":
                        await stdio(name, config, home)
                    else:
                        await http(name, config)
                except Exception as e:  # noqa: BLE001 - report and go on
                    check(f"[{name}] runs", False, repr(e))
                    for log in sorted(os.listdir(home)):
                        if log.startswith(name):
                            print(open(os.path.join(home, log)).read())
        finally:
            server.terminate()
            server.wait()
            server_log.close()
            if results["failed"]:
                print(open(os.path.join(work, "serve.log")).read()[-4000:])

    finish()


if __name__ == "__main__":
    asyncio.run(main())
