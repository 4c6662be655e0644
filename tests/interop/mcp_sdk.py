"""The MCP door, driven by the official Python `mcp` SDK.

Runs the failure-window checks over Streamable HTTP in three protocol eras
(the 2026-07-28 stateless revision, the SDK's default initialize handshake,
and an initialize at 2025-06-18), then over stdio (`tickets mcp-stdio`).
Needs BASE_URL, ACME_TOKEN, GLOBEX_TOKEN, DATABASE_URL and TICKETS_BIN
(run.sh sets them). Prints one PASS/FAIL line per check and a total.
"""

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
import urllib.request
import uuid

import httpx2
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BASE_URL = os.environ["BASE_URL"]
MCP_URL = f"{BASE_URL}/mcp"
ACME = os.environ["ACME_TOKEN"]
GLOBEX = os.environ["GLOBEX_TOKEN"]

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        results["passed"] += 1
        print(f"PASS {name}")
    else:
        results["failed"] += 1
        print(f"FAIL {name} {detail}")


@contextlib.asynccontextmanager
async def http_session(token, era):
    """A session in one protocol era: '2026-07-28', 'legacy' or '2025-06-18'."""
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0)
    ) as http:
        transport = streamable_http_client(MCP_URL, http_client=http)
        if era in ("2026-07-28", "legacy"):
            async with Client(transport, mode=era, cache=None) as client:
                yield client, client.protocol_version
        else:
            async with transport as (read, write), ClientSession(read, write) as session:
                result = await session.send_request(
                    types.InitializeRequest(
                        params=types.InitializeRequestParams(
                            protocol_version=era,
                            capabilities=types.ClientCapabilities(),
                            client_info=types.Implementation(name="interop", version="0"),
                        )
                    ),
                    types.InitializeResult,
                )
                session.adopt(result)
                await session.send_notification(types.InitializedNotification())
                yield session, result.protocol_version


async def create(client, key, project, title):
    return await client.call_tool(
        "create_ticket", {"operation_id": key, "project_id": project, "title": title}
    )


async def count(client, project):
    listed = await client.call_tool("list_tickets", {"project_id": project, "limit": 200})
    return len(listed.structured_content["tickets"])


def fresh_project():
    return "py-" + uuid.uuid4().hex[:12]


def abandon_call(key, project, title):
    """Sends a create over a raw socket and hangs up without reading the
    reply: the answer is lost, as after a client-side timeout. (A client that
    closes in the same instant it sends may be gone before the server starts
    the create; then nothing is recorded and the retry creates, which is
    correct too. The Rust end-to-end test covers that window with a held key.)"""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "create_ticket",
                "arguments": {"operation_id": key, "project_id": project, "title": title},
            },
        }
    ).encode()
    host = BASE_URL.removeprefix("http://")
    name, port = host.split(":")
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {ACME}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((name, int(port))) as s:
        s.sendall(head + body)
        time.sleep(0.2)


async def failure_windows(era):
    tag = f"[http {era}]"
    async with http_session(ACME, era) as (client, version):
        check(f"{tag} negotiated {version}", version is not None)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        create_tool = tools.get("create_ticket")
        a = create_tool.annotations if create_tool else None
        check(
            f"{tag} create_ticket is idempotent, additive, closed-world",
            a is not None
            and (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
            == (False, False, True, False),
        )
        check(
            f"{tag} operation_id is required",
            create_tool is not None and "operation_id" in create_tool.input_schema["required"],
        )

        # 1. Same id and payload twice: one ticket, one stable result.
        project, key = fresh_project(), str(uuid.uuid4())
        first = await create(client, key, project, "Disk full")
        second = await create(client, key, project, "Disk full")
        check(
            f"{tag} retry replays the original",
            first.structured_content["status"] == "created"
            and second.structured_content["status"] == "replayed"
            and first.structured_content["ticket"] == second.structured_content["ticket"],
            f"{first.structured_content} / {second.structured_content}",
        )
        # 2. Reused with changed input: a conflict, no second write.
        changed = await create(client, key, project, "Disk fuller")
        check(
            f"{tag} changed input is a conflict tool error",
            changed.is_error and changed.structured_content["status"] == "conflict",
        )
        check(f"{tag} still one ticket", await count(client, project) == 1)
        # 6. Status lookup tells the truth.
        status = await client.call_tool("get_operation_status", {"operation_id": key})
        check(
            f"{tag} status shows the created ticket",
            status.structured_content["state"] == "succeeded"
            and status.structured_content["ticket"]["id"]
            == first.structured_content["ticket"]["id"],
        )
        unknown = await client.call_tool("get_operation_status", {"operation_id": str(uuid.uuid4())})
        check(
            f"{tag} unknown id: nothing recorded, retry is safe",
            unknown.structured_content["state"] == "not_found"
            and unknown.structured_content["retry_safe"] is True,
        )

    # 3. Two identical concurrent calls, from two clients: one ticket.
    project, key = fresh_project(), str(uuid.uuid4())
    async with http_session(ACME, era) as (a, _), http_session(ACME, era) as (b, _):
        x, y = await asyncio.gather(create(a, key, project, "Race"), create(b, key, project, "Race"))
        check(
            f"{tag} concurrent identical calls share one ticket",
            x.structured_content["ticket"]["id"] == y.structured_content["ticket"]["id"]
            and sorted([x.structured_content["status"], y.structured_content["status"]])
            == ["created", "replayed"],
        )
        check(f"{tag} concurrent calls made one ticket", await count(a, project) == 1)

        # 4. A client that hangs up before the reply, then retries: the original.
        project, key = fresh_project(), str(uuid.uuid4())
        abandon_call(key, project, "Abandoned")
        committed = False
        for _ in range(100):
            status = await a.call_tool("get_operation_status", {"operation_id": key})
            if status.structured_content["state"] == "succeeded":
                committed = True
                break
            await asyncio.sleep(0.05)
        retry = await create(a, key, project, "Abandoned")
        check(
            f"{tag} a hung-up call commits once and the retry replays it",
            committed and retry.structured_content["status"] == "replayed",
            str(retry.structured_content),
        )
        check(f"{tag} hung-up call made one ticket", await count(a, project) == 1)

    # 5. The same id under another tenant: separate, no leak.
    project, key = fresh_project(), str(uuid.uuid4())
    async with http_session(ACME, era) as (acme, _), http_session(GLOBEX, era) as (globex, _):
        mine = await create(acme, key, project, "Acme only")
        peek = await globex.call_tool("get_operation_status", {"operation_id": key})
        check(
            f"{tag} another tenant sees nothing of the operation",
            peek.structured_content["state"] == "not_found",
        )
        theirs = await create(globex, key, project, "Globex")
        check(
            f"{tag} another tenant's same id is a separate ticket",
            theirs.structured_content["status"] == "created"
            and theirs.structured_content["ticket"]["id"] != mine.structured_content["ticket"]["id"],
        )


def rest_create(key, project, title):
    request = urllib.request.Request(
        f"{BASE_URL}/v1/tickets",
        data=json.dumps({"project_id": project, "title": title}).encode(),
        headers={
            "Authorization": f"Bearer {ACME}",
            "Idempotency-Key": key,
            "Content-Type": "application/json",
        },
        method="POST",
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)


async def cross_door():
    project, key = fresh_project(), str(uuid.uuid4())
    made = rest_create(key, project, "From REST")
    async with http_session(ACME, "2026-07-28") as (client, _):
        again = await create(client, key, project, "From REST")
        check(
            "[cross-door] created over REST, retried over MCP: replayed",
            again.structured_content["status"] == "replayed"
            and again.structured_content["ticket"]["id"] == made["id"],
        )


async def unauthorized():
    seen = []

    async def record(response):
        seen.append(response.status_code)

    async with httpx2.AsyncClient(
        headers={"Authorization": "Bearer tkt_wrong"}, event_hooks={"response": [record]}
    ) as http:
        try:
            async with Client(streamable_http_client(MCP_URL, http_client=http), mode="2026-07-28", cache=None) as c:
                await c.list_tools()
        except BaseException:  # the SDK reports HTTP errors as MCPError, possibly in groups
            pass
    check("[http] a wrong token is refused with 401", 401 in seen, str(seen))


async def stdio(era):
    tag = f"[stdio {era}]"
    params = StdioServerParameters(
        command=os.environ["TICKETS_BIN"],
        args=["mcp-stdio"],
        env={"TICKETS_TOKEN": ACME, "DATABASE_URL": os.environ["DATABASE_URL"], "RUST_LOG": "warn"},
    )
    project, key = fresh_project(), str(uuid.uuid4())
    made = rest_create(key, project, "Over HTTP")
    async with Client(params, mode=era, cache=None) as client:
        again = await create(client, key, project, "Over HTTP")
        check(
            f"{tag} a key used over HTTP replays over stdio",
            again.structured_content["status"] == "replayed"
            and again.structured_content["ticket"]["id"] == made["id"],
            str(again.structured_content),
        )
        fresh = await create(client, str(uuid.uuid4()), project, "Over stdio")
        check(f"{tag} creates as the token's tenant", fresh.structured_content["status"] == "created")


async def main():
    for era in ("2026-07-28", "legacy", "2025-06-18"):
        await failure_windows(era)
    await cross_door()
    await unauthorized()
    for era in ("2026-07-28", "legacy"):
        await stdio(era)
    print(f"mcp sdk: {results['passed']} passed, {results['failed']} failed")
    return 0 if results["failed"] == 0 else 1


sys.exit(asyncio.run(main()))
