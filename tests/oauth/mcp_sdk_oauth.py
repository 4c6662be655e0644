"""The official Python MCP SDK signs in on its own: no token is copied.

Two clients that follow the MCP authorization spec connect to /mcp with no
credentials and find everything through the server's 401:

1. `OAuthClientProvider` (authorization code + PKCE, as desktop agents do):
   the 401 names the protected resource metadata, which names the
   authorization server (oauth2-mock-server); the SDK reads its metadata,
   sends the "user" to /authorize (driven headlessly: the mock approves at
   once and redirects with a code), exchanges the code for a token for
   this resource (RFC 8707), and retries. The first grant is narrowed to
   tickets:read, so create_ticket gets 403 insufficient_scope and the SDK
   steps up (a second authorization asking for both scopes) on its own.
2. `ClientCredentialsOAuthProvider` (a service account): the same
   discovery, then client_credentials; its subject is mapped to a tenant
   with `tickets oauth map`.

Each creates a ticket and reads its status with get_operation_status.
Needs BASE_URL, CONTROL_URL, TRUSTED (run.sh sets them).
"""

import asyncio
import json
import os
import sys
import urllib.parse
import urllib.request
import uuid

import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

MCP_URL = f"{os.environ['BASE_URL']}/mcp"
CONTROL = os.environ["CONTROL_URL"]
TRUSTED = os.environ["TRUSTED"]
REDIRECT = "http://127.0.0.1:9/callback"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from checks import check, results  # noqa: E402


def control(path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{CONTROL}{path}", data=data, method="POST" if data else "GET",
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


class Memory(TokenStorage):
    """Tokens in memory; the client is pre-registered (the mock has no DCR)."""

    def __init__(self, client_info=None):
        self.tokens = None
        self.client_info = client_info
        self.granted = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens
        self.granted.append(tokens.scope)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Browser:
    """The user's browser, headless: follows the authorization URL to the
    redirect the authorization server answers with, and hands its code to
    the SDK's callback."""

    def __init__(self):
        self.redirects = []

    async def open(self, url):
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
            answer = await http.get(url)
        self.redirects.append(answer.headers["location"])

    async def callback(self):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.redirects[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


async def create_and_look_up(client, tag):
    key = str(uuid.uuid4())
    made = await client.call_tool(
        "create_ticket", {"operation_id": key, "project_id": "sdk-oauth", "title": f"Signed in ({tag})"}
    )
    check(f"[{tag}] create_ticket is created", made.structured_content.get("status") == "created", made)
    looked = await client.call_tool("get_operation_status", {"operation_id": key})
    check(
        f"[{tag}] get_operation_status finds it",
        looked.structured_content.get("state") == "succeeded",
        looked,
    )


async def authorization_code():
    tag = "authorization code + PKCE"
    browser = Browser()
    storage = Memory(
        OAuthClientInformationFull(
            client_id="desktop-agent",
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
        )
    )
    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=OAuthClientMetadata(
            client_name="tickets interop",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    before = control("/info")["authorizations"]
    # The first consent grants only tickets:read: the write must step up.
    control("/narrower", {"scope": "tickets:read", "times": 1})
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0)) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode="2026-07-28", cache=None) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            check(f"[{tag}] signed in and listed the tools", "create_ticket" in tools, tools)
            await create_and_look_up(client, tag)
    authorizations = control("/info")["authorizations"] - before
    check(
        f"[{tag}] discovered the authorization server and signed in, then stepped up once",
        authorizations == 2 and storage.granted[0] == "tickets:read"
        and set(storage.granted[-1].split()) >= {"tickets:read", "tickets:write"},
        f"authorizations={authorizations} granted={storage.granted}",
    )
    check(
        f"[{tag}] the resource indicator was this server's /mcp",
        provider.context.get_resource_url() == MCP_URL,
        provider.context.get_resource_url(),
    )


async def client_credentials():
    tag = "client credentials"
    provider = ClientCredentialsOAuthProvider(
        server_url=MCP_URL,
        storage=Memory(),
        client_id="ci-bot",
        client_secret="s3cret",
        issuer=TRUSTED,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0)) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode="2026-07-28", cache=None) as client:
            await create_and_look_up(client, tag)


async def main():
    for flow in (authorization_code, client_credentials):
        try:
            await flow()
        except Exception as e:  # noqa: BLE001 - report, do not hide
            check(f"{flow.__name__} completed", False, repr(e))
    print(f"{results['passed']} passed, {results['failed']} failed")
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
