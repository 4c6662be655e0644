"""MCP tasks (the 2026-07-28 `io.modelcontextprotocol/tasks` extension) with
the official Python `mcp` SDK, against the remote backend.

The SDK (2.3.0) ships no tasks support of its own (tasks/* are absent from
its method tables); it ships the generic extension seam this script uses:
a ClientExtension that claims `resultType: "task"` on tools/call, and
requests for tasks/get and tasks/cancel (Mcp-Name: the taskId).

Checks, on BASE_URL (the remote-backend server, default bound):
- a create whose provider answer is lost becomes a task the SDK resolves
  transparently (polling tasks/get) into the create's own result;
- kept as a handle: a create the provider holds longer than the server's
  provider timeout (500 ms), then makes, is a `working` task named
  create_ticket/{operation_id}; tasks/cancel is acknowledged (the write goes on); tasks/get
  ends `completed` with the create's own `created`, made once;
- unknown ids and another tenant's task are -32602;
- a client without the extension gets today's blocking `unknown`.
On SLOW_URL (request timeout 1 s, so the bound is 0.5 s): a create slower
than the bound is a task while the provider works, completed `created`.

Needs BASE_URL, SLOW_URL, SIM_URL, ACME_TOKEN and GLOBEX_TOKEN (run.sh sets
them). Prints one PASS/FAIL line per check and a total.
"""

import asyncio
import json
import os
import sys
import time
import urllib.request
import uuid
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

BASE_URL = os.environ["BASE_URL"]
SLOW_URL = os.environ["SLOW_URL"]
SIM_URL = os.environ["SIM_URL"]
ACME = os.environ["ACME_TOKEN"]
GLOBEX = os.environ["GLOBEX_TOKEN"]
TASKS = "io.modelcontextprotocol/tasks"

results = {"passed": 0, "failed": 0}
resolved = []


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


class TaskFields(types.Result):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class CreateTaskResult(TaskFields):
    """`resultType: "task"` on tools/call."""

    result_type: Literal["task"]


class GetTaskResult(TaskFields):
    """tasks/get: the task, with the tool's result once completed."""

    result_type: str | None = "complete"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class UpdateTaskRequest(types.Request[TaskIdParams, Literal["tasks/update"]]):
    """tasks/update without inputResponses: a malformed request."""

    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


async def get_task(session, task_id):
    return await session.send_request(GetTaskRequest(params=TaskIdParams(task_id=task_id)), GetTaskResult)


async def session_request(session, request):
    return await session.send_request(request, types.EmptyResult)


async def cancel_task(session, task_id):
    await session.send_request(CancelTaskRequest(params=TaskIdParams(task_id=task_id)), types.EmptyResult)


async def settled(session, task_id, interval=0.2, attempts=100):
    """Polls tasks/get (faster than pollIntervalMs: a test) until the task is over."""
    got = None
    for _ in range(attempts):
        got = await get_task(session, task_id)
        if got.status != "working":
            return got
        await asyncio.sleep(interval)
    return got


async def poll(task: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
    """The resolver: polls tasks/get at the task's interval until it is over."""
    resolved.append(task.task_id)
    interval = (task.poll_interval_ms or 1000) / 1000
    while True:
        await asyncio.sleep(interval)
        got = await get_task(ctx.session, task.task_id)
        interval = (got.poll_interval_ms or 1000) / 1000
        if got.status == "completed":
            return types.CallToolResult.model_validate(got.result, by_name=False)
        if got.status != "working":
            raise RuntimeError(f"task {task.task_id} ended {got.status}: {got}")


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=poll)]


def client(url, http, tasks=True):
    transport = streamable_http_client(f"{url}/mcp", http_client=http)
    extensions = [Tasks()] if tasks else []
    return Client(transport, mode="2026-07-28", extensions=extensions, cache=None)


def http_client(token):
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0))


def create_args(key, title):
    return {"operation_id": key, "project_id": "ops", "title": title}


def refusal(e):
    return getattr(e, "error", None)


async def main():
    async with http_client(ACME) as http, client(BASE_URL, http) as acme:
        # Transparent: the SDK resolves the task into the create's result.
        key = str(uuid.uuid4())
        title = f"python task {key}"
        sim("/_sim/faults", {"on": "create", "title_contains": key, "fault": {"kind": "commit_then_drop"}})
        final = await acme.call_tool("create_ticket", create_args(key, title))
        body = final.structured_content or {}
        check("a lost answer became a task the SDK resolved", resolved == [f"create_ticket/{key}"], resolved)
        check("its result is the create's own: created", body.get("status") == "created" and not final.is_error, body)
        status = await acme.call_tool("get_operation_status", {"operation_id": key})
        st = status.structured_content or {}
        check(
            "the task's ticket is the operation's ticket",
            (body.get("ticket") or {}).get("id") == (st.get("ticket") or {}).get("id") is not None,
            (body, st),
        )

        # As a handle: the provider holds the create past the server's 500 ms
        # provider timeout, then makes it (within its 1.5 s in-flight bound).
        key2 = str(uuid.uuid4())
        title2 = f"python task {key2}"
        sim("/_sim/faults", {"on": "create", "title_contains": key2, "fault": {"kind": "hang", "ms": 1200}})
        handle = await acme.session.call_tool("create_ticket", create_args(key2, title2), allow_claimed=True)
        task_id = f"create_ticket/{key2}"
        check(
            "a lost answer is a working task named after the operation",
            isinstance(handle, CreateTaskResult) and handle.task_id == task_id and handle.status == "working",
            handle,
        )
        check(
            "the task says how often to poll and how long it is kept",
            getattr(handle, "poll_interval_ms", None) == 2000 and (getattr(handle, "ttl_ms", 0) or 0) > 0,
            handle,
        )
        try:
            await cancel_task(acme.session, task_id)
            check("tasks/cancel is acknowledged with an empty result (the write goes on)", True, "")
        except MCPError as e:
            check("tasks/cancel is acknowledged with an empty result (the write goes on)", False, repr(e))
        done = await settled(acme.session, task_id)
        r = (done.result or {}).get("structuredContent") or {}
        check(
            "the task completes with the create's own result: created",
            done.status == "completed" and r.get("status") == "created" and not (done.result or {}).get("isError"),
            done,
        )
        counts = sim("/_sim/counts")
        made = sum(t == title2 for r in counts["by_external_ref"] for t in r["titles"])
        check("the provider holds the held create once", made == 1, counts)

        # tasks/update without its inputResponses is invalid params, naming
        # the field (it was "method not found", with a 404).
        try:
            await session_request(acme.session, UpdateTaskRequest(params=TaskIdParams(task_id=task_id)))
            check("tasks/update without inputResponses is refused", False, "accepted")
        except MCPError as e:
            error = refusal(e)
            check(
                "tasks/update without inputResponses is -32602 naming inputResponses",
                error is not None and error.code == -32602 and "inputResponses" in error.message,
                repr(e),
            )

        # Ids that name nothing this tenant recorded.
        for raw in ["nope", f"create_ticket/{uuid.uuid4()}", f"delete_ticket/{key}"]:
            try:
                await get_task(acme.session, raw)
                check(f"tasks/get {raw} is not found", False, "found")
            except MCPError as e:
                error = refusal(e)
                check(
                    f"tasks/get {raw} is not found (-32602), pointing to get_operation_status",
                    error is not None and error.code == -32602 and "get_operation_status" in error.message,
                    repr(e),
                )
    async with http_client(GLOBEX) as http, client(BASE_URL, http) as globex:
        try:
            await get_task(globex.session, f"create_ticket/{key}")
            check("another tenant cannot read the task", False, "found")
        except MCPError as e:
            check("another tenant cannot read the task (-32602)", refusal(e) is not None and refusal(e).code == -32602, e)

    # A client without the extension waits, as before.
    async with http_client(ACME) as http, client(BASE_URL, http, tasks=False) as plain:
        key3 = str(uuid.uuid4())
        sim("/_sim/faults", {"on": "create", "title_contains": key3, "fault": {"kind": "commit_then_drop"}})
        answer = await plain.call_tool("create_ticket", create_args(key3, f"python plain {key3}"))
        a = answer.structured_content or {}
        check("a client without the extension gets the blocking unknown", a.get("status") == "unknown", a)

    await slower_than_the_bound()
    counts = sim("/_sim/counts")
    made = sum(t == title for r in counts["by_external_ref"] for t in r["titles"])
    check("the provider holds the lost create once", made == 1, counts)
    print(f"python mcp (tasks): {results['passed']} passed, {results['failed']} failed")
    return results["failed"] == 0


async def slower_than_the_bound():
    """On SLOW_URL the bound is half its 1 s request timeout."""
    key = str(uuid.uuid4())
    title = f"python slow task {key}"
    sim("/_sim/faults", {"on": "create", "title_contains": key, "fault": {"kind": "latency", "ms": 2500}})
    async with http_client(ACME) as http, client(SLOW_URL, http) as acme:
        started = time.monotonic()
        handle = await acme.session.call_tool("create_ticket", create_args(key, title), allow_claimed=True)
        waited = time.monotonic() - started
        check(
            "a create slower than the bound is a task before the request timeout",
            isinstance(handle, CreateTaskResult) and handle.status == "working" and waited < 1.0,
            (waited, handle),
        )
        check(
            "the working task says the ticket is being sent",
            "being sent to the ticket provider" in (getattr(handle, "status_message", "") or ""),
            handle,
        )
        done = await settled(acme.session, f"create_ticket/{key}")
        r = (done.result or {}).get("structuredContent") or {}
        check("once the provider answers, it completes: created", r.get("status") == "created", done)
    counts = sim("/_sim/counts")
    made = sum(t == title for r in counts["by_external_ref"] for t in r["titles"])
    check("the provider holds the slow create once", made == 1, counts)


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main()) else 1)
