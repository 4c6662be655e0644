"""The MCP door, driven by the official Python `mcp` SDK.

Runs the failure-window checks over Streamable HTTP in three protocol eras
(the 2026-07-28 stateless revision, the SDK's default initialize handshake,
and an initialize at 2025-06-18), the ticket lifecycle (update_ticket,
transition_ticket, add_comment, list_comments, get_operation_status by
action), then over stdio (`tickets mcp-stdio`).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from checks import check, results  # noqa: E402


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


async def call(client, tool, arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, result.structured_content


async def lifecycle(era):
    tag = f"[lifecycle {era}]"
    async with http_session(ACME, era) as (client, _):
        tools = {t.name: t for t in (await client.list_tools()).tools}

        def hints(name):
            a = tools[name].annotations if name in tools else None
            return a and (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)

        check(
            f"{tag} write tools are idempotent and closed-world; only update_ticket is destructive",
            hints("update_ticket") == (False, True, True, False)
            and hints("transition_ticket") == (False, False, True, False)
            and hints("add_comment") == (False, False, True, False),
            str([hints(n) for n in ("update_ticket", "transition_ticket", "add_comment")]),
        )
        check(
            f"{tag} list_comments is read-only and idempotent",
            hints("list_comments") == (True, None, True, False),
            str(hints("list_comments")),
        )
        action_enum = tools["get_operation_status"].input_schema["properties"]["action"]["enum"]
        check(
            f"{tag} get_operation_status takes an action",
            action_enum
            == [
                "create_ticket",
                "update_ticket",
                "transition_ticket",
                "add_comment",
                "add_label",
                "remove_label",
            ],
            str(action_enum),
        )

        project = fresh_project()
        made = await create(client, str(uuid.uuid4()), project, "Disk full")
        ticket_id = made.structured_content["ticket"]["id"]

        # update_ticket, and its replay after the ticket changed again.
        key = str(uuid.uuid4())
        args = {
            "ticket_id": ticket_id,
            "title": "Disk full on db-1",
            "assignee": "Ada",
            "expected_version": 1,
            "operation_id": key,
        }
        err1, first = await call(client, "update_ticket", args)
        _, other = await call(
            client, "update_ticket", {"ticket_id": ticket_id, "priority": "high", "operation_id": str(uuid.uuid4())}
        )
        err2, again = await call(client, "update_ticket", args)
        check(
            f"{tag} update_ticket updates, and a retry replays the first result",
            not err1
            and not err2
            and first["status"] == "updated"
            and first["ticket"]["version"] == 2
            and again["status"] == "replayed"
            and again["ticket"] == first["ticket"]
            and other["ticket"]["version"] == 3,
            f"{first} / {again}",
        )
        _, removed = await call(
            client, "update_ticket", {"ticket_id": ticket_id, "assignee": None, "operation_id": str(uuid.uuid4())}
        )
        check(
            f"{tag} null unassigns; left out keeps",
            removed["ticket"]["assignee"] is None and removed["ticket"]["title"] == "Disk full on db-1",
            str(removed),
        )
        stale_key = str(uuid.uuid4())
        err, stale = await call(
            client,
            "update_ticket",
            {"ticket_id": ticket_id, "title": "Stale", "expected_version": 1, "operation_id": stale_key},
        )
        _, unused = await call(
            client, "get_operation_status", {"operation_id": stale_key, "action": "update_ticket"}
        )
        check(
            f"{tag} a stale expected_version is a tool error that keeps the key",
            err
            and stale["status"] == "version_mismatch"
            and stale["current_version"] == 4
            and "get_ticket" in stale["next_step"]
            and unused["state"] == "not_found",
            f"{stale} / {unused}",
        )

        # transition_ticket: a move not allowed, then an allowed one.
        key = str(uuid.uuid4())
        err, refused = await call(
            client, "transition_ticket", {"ticket_id": ticket_id, "to": "closed", "operation_id": key}
        )
        check(
            f"{tag} a move not allowed is a tool error naming allowed_moves",
            err and refused["status"] == "transition_not_allowed" and refused["allowed_moves"] == ["in_progress"],
            str(refused),
        )
        args = {"ticket_id": ticket_id, "to": "in_progress", "reason": "On it", "operation_id": key}
        err1, moved = await call(client, "transition_ticket", args)
        err2, moved_again = await call(client, "transition_ticket", args)
        check(
            f"{tag} transition_ticket moves with the same (unused) key, and a retry replays",
            not err1
            and not err2
            and moved["status"] == "updated"
            and moved["ticket"]["status"] == "in_progress"
            and moved_again["status"] == "replayed"
            and moved_again["ticket"] == moved["ticket"],
            f"{moved} / {moved_again}",
        )

        # add_comment and its replay; list_comments.
        comment_key = str(uuid.uuid4())
        args = {"ticket_id": ticket_id, "body": "Freed 20 GB.", "operation_id": comment_key}
        err1, added = await call(client, "add_comment", args)
        err2, added_again = await call(client, "add_comment", args)
        check(
            f"{tag} add_comment adds once; a retry replays the same comment",
            not err1
            and not err2
            and added["status"] == "created"
            and added_again["status"] == "replayed"
            and added_again["comment"] == added["comment"],
            f"{added} / {added_again}",
        )
        err, listed = await call(client, "list_comments", {"ticket_id": ticket_id})
        check(
            f"{tag} list_comments shows the one comment",
            not err and listed["comments"] == [added["comment"]] and listed["next_cursor"] is None,
            str(listed),
        )

        # get_operation_status, by action.
        _, by_update = await call(
            client, "get_operation_status", {"operation_id": stale_key, "action": "update_ticket"}
        )
        _, by_transition = await call(
            client, "get_operation_status", {"operation_id": key, "action": "transition_ticket"}
        )
        _, by_comment = await call(
            client, "get_operation_status", {"operation_id": comment_key, "action": "add_comment"}
        )
        _, by_default = await call(client, "get_operation_status", {"operation_id": comment_key})
        check(
            f"{tag} get_operation_status finds each write by its action",
            by_update["state"] == "not_found"
            and by_transition["state"] == "succeeded"
            and by_transition["ticket"] == moved["ticket"]
            and by_comment["state"] == "succeeded"
            and by_comment["comment"] == added["comment"]
            and by_default["action"] == "create_ticket"
            and by_default["state"] == "not_found",
            f"{by_transition} / {by_comment} / {by_default}",
        )

    # Another tenant's ticket: not found, for every tool that names one.
    async with http_session(GLOBEX, era) as (globex, _):
        answers = [
            await call(globex, "update_ticket", {"ticket_id": ticket_id, "title": "Mine", "operation_id": str(uuid.uuid4())}),
            await call(globex, "add_comment", {"ticket_id": ticket_id, "body": "Peek", "operation_id": str(uuid.uuid4())}),
        ]
        check(
            f"{tag} another tenant's ticket is not found",
            all(err and body["status"] == "not_found" for err, body in answers),
            str(answers),
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

    said = ""
    async with httpx2.AsyncClient(
        headers={"Authorization": "Bearer tkt_wrong"}, event_hooks={"response": [record]}
    ) as http:
        try:
            async with Client(streamable_http_client(MCP_URL, http_client=http), mode="2026-07-28", cache=None) as c:
                await c.list_tools()
        except BaseException as e:  # the SDK reports HTTP errors as MCPError, possibly in groups
            said = repr(e)
    check("[http] a wrong token is refused with 401", 401 in seen, str(seen))
    # The 401's body is JSON-RPC, so the SDK can show its user why (a REST
    # problem document reached them as "Server returned an error response").
    check(
        "[http] the SDK shows why the token was refused",
        "unknown or revoked" in said,
        said[:300],
    )


async def read_errors(era):
    """A read tool's problem keeps to its output schema: JSON text, no
    structuredContent (the Inspector fails a call whose structured content
    breaks the schema)."""
    tag = f"[read errors {era}]"
    async with http_session(ACME, era) as (client, _):
        for tool, arguments, error in (
            ("get_ticket", {"ticket_id": str(uuid.uuid4())}, "not_found"),
            ("list_comments", {"ticket_id": str(uuid.uuid4())}, "not_found"),
            ("list_tickets", {"limit": 0}, "invalid"),
        ):
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text if result.content else ""
            try:
                problem = json.loads(text)
            except ValueError:
                problem = {}
            check(
                f"{tag} {tool} answers a problem as text, with no structuredContent",
                result.is_error and result.structured_content is None and problem.get("error") == error,
                f"{result.is_error} {result.structured_content} {text[:200]}",
            )


def stdio_without_a_database():
    """mcp-stdio started from a folder of the host's, with a relative path
    to no database: it names the absolute path and makes nothing."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [os.environ["TICKETS_BIN"], "mcp-stdio"],
            cwd=cwd,
            env={"TICKETS_TOKEN": ACME, "DATABASE_URL": "sqlite:data/tickets.db", "PATH": os.environ.get("PATH", "")},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        absolute = os.path.join(os.path.realpath(cwd), "data", "tickets.db")
        check(
            "[stdio] without a database it says where it looked and makes none",
            done.returncode != 0
            and absolute in done.stderr
            and "DATABASE_URL" in done.stderr
            and not os.path.exists(os.path.join(cwd, "data")),
            f"exit {done.returncode}: {done.stderr[-300:]}",
        )


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
    for era in ("2026-07-28", "2025-06-18"):
        await lifecycle(era)
    await cross_door()
    await unauthorized()
    for era in ("2026-07-28", "2025-06-18"):
        await read_errors(era)
    for era in ("2026-07-28", "legacy"):
        await stdio(era)
    stdio_without_a_database()
    print(f"mcp sdk: {results['passed']} passed, {results['failed']} failed")
    return 0 if results["failed"] == 0 else 1


sys.exit(asyncio.run(main()))
