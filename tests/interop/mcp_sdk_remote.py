"""The MCP door over the remote backend, driven by the official Python `mcp`
SDK: a lost provider answer is `status: unknown` (not an error) pointing to
get_operation_status; that tool reconciles and returns the ticket; the
retry replays; the provider simulator counts one ticket. The tools that
reach the provider (the create, the status read) say they are open-world.
The other writes
(only create_ticket is sent to a provider) are refused as tool errors.

Then, against SLOW_URL (the same backend with a request timeout shorter
than the provider's answer), a create the server stops waiting for: the SDK
gets a JSON-RPC error it can read (-32001, saying to check
get_operation_status), and the create still ends in one ticket.

Needs BASE_URL (a server with TICKET_BACKEND=remote), SLOW_URL, SIM_URL and
ACME_TOKEN (run.sh sets them).
"""

import asyncio
import json
import os
import sys
import urllib.request
import uuid

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BASE_URL = os.environ["BASE_URL"]
SIM_URL = os.environ["SIM_URL"]
ACME = os.environ["ACME_TOKEN"]

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(f"PASS {name}" if ok else f"FAIL {name} {detail}")


def sim(path, body=None):
    request = urllib.request.Request(
        f"{SIM_URL}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    with urllib.request.urlopen(request) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


async def main():
    key = str(uuid.uuid4())
    title = f"python remote {key}"
    sim("/_sim/faults", {"title_contains": key, "fault": {"kind": "commit_then_500"}})
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {ACME}"}, timeout=httpx2.Timeout(30.0)
    ) as http:
        transport = streamable_http_client(f"{BASE_URL}/mcp", http_client=http)
        async with Client(transport, mode="2026-07-28", cache=None) as client:
            tools = (await client.list_tools()).tools
            open_world = sorted(t.name for t in tools if t.annotations and t.annotations.open_world_hint)
            check(
                "only the tools that reach the provider are open-world",
                open_world
                == [
                    "add_comment",
                    "create_ticket",
                    "get_operation_status",
                    "transition_ticket",
                    "update_ticket",
                ],
                open_world,
            )
            args = {"operation_id": key, "project_id": "ops", "title": title}
            first = await client.call_tool("create_ticket", args)
            s = first.structured_content or {}
            check("a lost provider answer is status unknown", s.get("status") == "unknown", s)
            check("unknown is not a tool error", not first.is_error, first)
            check(
                "unknown points to get_operation_status and the same operation_id",
                "get_operation_status" in s.get("next_step", "")
                and "new operation_id" in s.get("next_step", ""),
                s,
            )
            status = await client.call_tool("get_operation_status", {"operation_id": key})
            st = status.structured_content or {}
            check("get_operation_status reconciles to succeeded", st.get("state") == "succeeded", st)
            ticket = (st.get("ticket") or {}).get("id")
            check("get_operation_status returns the ticket", bool(ticket), st)
            retry = await client.call_tool("create_ticket", args)
            r = retry.structured_content or {}
            check(
                "the retry replays the same ticket",
                r.get("status") == "replayed" and (r.get("ticket") or {}).get("id") == ticket,
                r,
            )
            # The provider loses the update's answer too: unknown, then the
            # status read reconciles it, and the retry replays.
            sim("/_sim/faults", {"on": "update", "title_contains": key, "fault": {"kind": "commit_then_drop"}})
            update_key = str(uuid.uuid4())
            update_args = {"ticket_id": ticket, "title": f"{title} renamed", "operation_id": update_key}
            update = await client.call_tool("update_ticket", update_args)
            u = update.structured_content or {}
            check(
                "a lost update is status unknown, not a tool error",
                u.get("status") == "unknown" and not update.is_error,
                u,
            )
            status = await client.call_tool(
                "get_operation_status", {"operation_id": update_key, "action": "update_ticket"}
            )
            st = status.structured_content or {}
            check("the update's status reconciles to succeeded", st.get("state") == "succeeded", st)
            again = await client.call_tool("update_ticket", update_args)
            a = again.structured_content or {}
            check(
                "the update's retry replays version 2",
                a.get("status") == "replayed" and (a.get("ticket") or {}).get("version") == 2,
                a,
            )
    counts = sim("/_sim/counts")
    # The ticket carries its title as renamed by the update.
    made = sum(t in (title, f"{title} renamed") for r in counts["by_external_ref"] for t in r["titles"])
    check("the provider holds one ticket", made == 1, counts)
    changed = sum(r["count"] for r in counts["changes_by_external_ref"] if r["ticket_title"] == f"{title} renamed")
    check("the provider holds one change", changed == 1, counts)
    await timed_out_create()
    print(f"python mcp (remote backend): {results['passed']} passed, {results['failed']} failed")
    return results["failed"] == 0


async def timed_out_create():
    """A create slower than the server's request timeout."""
    key = str(uuid.uuid4())
    title = f"python slow {key}"
    sim("/_sim/faults", {"title_contains": key, "fault": {"kind": "latency", "ms": 2500}})
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {ACME}"}, timeout=httpx2.Timeout(30.0)
    ) as http:
        transport = streamable_http_client(f"{os.environ['SLOW_URL']}/mcp", http_client=http)
        async with Client(transport, mode="legacy", cache=None) as client:
            args = {"operation_id": key, "project_id": "ops", "title": title}
            try:
                answer = await client.call_tool("create_ticket", args)
                check("a timed-out create is a JSON-RPC error the SDK reads", False, answer)
            except Exception as e:  # the SDK's own error type for JSON-RPC errors
                code = getattr(getattr(e, "error", None), "code", None)
                if code is None and e.args and isinstance(e.args[0], int):
                    code = e.args[0]
                check(
                    "a timed-out create is a JSON-RPC error the SDK reads (-32001)",
                    code == -32001 and "get_operation_status" in str(e),
                    repr(e),
                )
            state = None
            for _ in range(50):
                status = await client.call_tool("get_operation_status", {"operation_id": key})
                state = (status.structured_content or {}).get("state")
                if state == "succeeded":
                    break
                await asyncio.sleep(0.2)
            check("the create the server stopped waiting for still succeeds", state == "succeeded", state)
            retry = await client.call_tool("create_ticket", args)
            r = retry.structured_content or {}
            check("its retry replays", r.get("status") == "replayed", r)
    counts = sim("/_sim/counts")
    made = sum(t == title for r in counts["by_external_ref"] for t in r["titles"])
    check("the provider holds one slow ticket", made == 1, counts)


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main()) else 1)
