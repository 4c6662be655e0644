"""Every case of issue 18 against a real authorization server.

The tickets server trusts `oauth2-mock-server` (started by run.sh); tokens
come from its /token endpoint or are minted with its own keys through the
control endpoint of auth_server.mjs. Each case drives both doors (REST and
/mcp over plain HTTP) and checks status, headers and problem type.
Needs BASE_URL, CONTROL_URL, AUDIENCE, TRUSTED, UNTRUSTED, SLOW, DOWN,
ACME_TOKEN, ACME_READ_TOKEN (run.sh sets them). Prints one PASS/FAIL line
per check and a total.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid


BASE = os.environ["BASE_URL"]
CONTROL = os.environ["CONTROL_URL"]
AUDIENCE = os.environ["AUDIENCE"]
TRUSTED = os.environ["TRUSTED"]
SLOW = os.environ["SLOW"]
DOWN = os.environ["DOWN"]
METADATA = f"{BASE}/.well-known/oauth-protected-resource/mcp"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from checks import check, results  # noqa: E402


def request(method, url, token=None, body=None, headers=None, form=None):
    """(status, headers, parsed body or text, seconds)."""
    headers = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers.setdefault("content-type", "application/json")
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["content-type"] = "application/x-www-form-urlencoded"
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            status, got, raw = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        status, got, raw = e.code, e.headers, e.read()
    took = time.monotonic() - started
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return status, got, parsed, took


def b64(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def control(path, body=None):
    return request("POST" if body is not None else "GET", f"{CONTROL}{path}", body=body)[2]


def mint(claims, issuer="trusted", **options):
    base = {"aud": AUDIENCE, "scope": "tickets:read tickets:write", "org_id": "acme"}
    base.update(claims)
    return control("/mint", {"issuer": issuer, "claims": base, **options})["token"]


def create(token, key=None):
    return request(
        "POST",
        f"{BASE}/v1/tickets",
        token,
        {"project_id": "oauth", "title": "Made with an access token"},
        {"idempotency-key": key or str(uuid.uuid4())},
    )


def mcp(token, method, params=None, rpc_id=1):
    message = {"jsonrpc": "2.0", "id": rpc_id, "method": method}
    if params is not None:
        message["params"] = params
    return request(
        "POST",
        f"{BASE}/mcp",
        token,
        message,
        {"accept": "application/json, text/event-stream"},
    )


def mcp_create(token, key):
    return mcp(
        token,
        "tools/call",
        {"name": "create_ticket", "arguments": {"operation_id": key, "project_id": "oauth", "title": "Over MCP"}},
    )


def challenge(headers):
    return headers.get("www-authenticate") or ""


def refused_401(name, token, says):
    """A token both doors refuse with 401, naming the metadata."""
    status, headers, body, _ = create(token)
    detail = (body or {}).get("detail", "") if isinstance(body, dict) else ""
    header = challenge(headers)
    check(
        f"{name}: REST 401 invalid_token naming the metadata",
        status == 401
        and 'error="invalid_token"' in header
        and f'resource_metadata="{METADATA}"' in header
        and (body or {}).get("type") == "/problems/unauthorized",
        f"{status} {header} {body}",
    )
    check(f"{name}: says why ({says!r})", says in detail, detail)
    status, headers, body, _ = mcp_create(token, str(uuid.uuid4()))
    check(f"{name}: /mcp 401", status == 401 and "invalid_token" in challenge(headers), f"{status} {body}")


def main():
    # Discovery: the 401 names the metadata, the metadata names the server.
    status, headers, _, _ = mcp(None, "tools/list")
    check(
        "an anonymous /mcp call is 401 naming the resource metadata",
        status == 401 and f'resource_metadata="{METADATA}"' in challenge(headers),
        challenge(headers),
    )
    status, _, doc, _ = request("GET", METADATA)
    # Every trusted issuer, in the order configured (clients take the first).
    check(
        "the metadata names the authorization servers, the scopes and the resource",
        status == 200
        and doc["authorization_servers"] == [TRUSTED, SLOW, DOWN]
        and doc["resource"] == AUDIENCE
        and doc["scopes_supported"] == ["tickets:read", "tickets:write"],
        doc,
    )

    # A valid token from the real /token endpoint (client_credentials, the
    # resource indicator as audience), mapped by subject to acme.
    status, _, grant, _ = request(
        "POST",
        f"{TRUSTED}/token",
        form={
            "grant_type": "client_credentials",
            "client_id": "ci-bot",
            "client_secret": "s3cret",
            "resource": AUDIENCE,
            "scope": "tickets:read tickets:write",
        },
    )
    check("the authorization server grants a token", status == 200, grant)
    token = grant["access_token"]
    key = str(uuid.uuid4())
    status, _, ticket, _ = create(token, key)
    check("valid token: REST create is 201", status == 201, ticket)
    status, _, op, _ = request("GET", f"{BASE}/v1/operations/create_ticket/{key}", token)
    check("valid token: the status lookup finds it", status == 200 and op["state"] == "succeeded", op)
    mcp_key = str(uuid.uuid4())
    status, _, body, _ = mcp_create(token, mcp_key)
    made = (body or {}).get("result", {}).get("structuredContent", {})
    check("valid token: MCP create_ticket is created", status == 200 and made.get("status") == "created", body)
    status, _, body, _ = mcp(
        token, "tools/call", {"name": "get_operation_status", "arguments": {"operation_id": mcp_key}}
    )
    looked = (body or {}).get("result", {}).get("structuredContent", {})
    check("valid token: MCP get_operation_status succeeded", looked.get("state") == "succeeded", body)

    # A minted token with the tenant claim.
    status, _, _, _ = create(mint({}))
    check("a token with org_id=acme creates", status == 201)

    refused_401("expired", mint({}, expiresIn=-120), "has expired")
    refused_401("another audience", mint({"aud": "https://other.example/mcp"}), "another audience")
    refused_401("an untrusted issuer", mint({}, issuer="untrusted"), "is not trusted")
    refused_401(
        "a key the trusted issuer does not publish",
        mint({"iss": TRUSTED}, issuer="untrusted"),
        "does not publish",
    )
    refused_401("no tenant claim", mint({"org_id": None}), "has no org_id claim")
    refused_401("an unknown tenant", mint({"org_id": "initech"}), "names no tenant here")
    status, _, _, _ = request("GET", f"{BASE}/v1/tickets", os.environ["ACME_TOKEN"])
    check("no tenant was made for initech (acme still reads)", status == 200)

    # Bad input.
    good = mint({})
    header = json.loads(base64.urlsafe_b64decode(good.split(".")[0] + "=="))
    claims_part = good.split(".")[1]
    none_header = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": header["kid"]}).encode())
    refused_401("garbage", "not.a.jwt", "not a JWT")
    refused_401("alg none", f"{none_header}.{claims_part}.", "not a JWT")
    # The classic confusion: HS256 "signed" with the issuer's public key as
    # the secret, naming that key.
    jwks = request("GET", f"{TRUSTED}/jwks")[2]
    public = json.dumps(jwks["keys"][0]).encode()
    hs_header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": header["kid"]}).encode())
    signing_input = f"{hs_header}.{claims_part}".encode()
    hs256 = f"{hs_header}.{claims_part}.{b64(hmac.new(public, signing_input, hashlib.sha256).digest())}"
    refused_401("HS256 with the RSA key's kid", hs256, "HMAC")
    refused_401("oversized", "a" * 9000 + ".b.c", "larger than 8 KiB")

    # Key rotation: a new kid is fetched when first seen.
    rotated = control("/rotate", {})["kid"]
    time.sleep(float(os.environ.get("COOLDOWN_SECS", "1")) + 0.2)
    status, _, _, _ = create(mint({}, kid=rotated))
    check("a token signed with a rotated key is accepted after a refresh", status == 201)

    # Scopes: 403 with the step-up challenge on both doors.
    reader = mint({"scope": "tickets:read"})
    status, _, _, _ = request("GET", f"{BASE}/v1/tickets", reader)
    check("a read-only token reads", status == 200)
    key = str(uuid.uuid4())
    status, headers, body, _ = create(reader, key)
    header = challenge(headers)
    check(
        "a read-only token's write is 403 insufficient_scope scope=tickets:write",
        status == 403
        and 'error="insufficient_scope"' in header
        and 'scope="tickets:write"' in header
        and f'resource_metadata="{METADATA}"' in header
        and body.get("type") == "/problems/insufficient-scope",
        f"{status} {header} {body}",
    )
    status, headers, body, _ = mcp_create(reader, key)
    check(
        "the same over /mcp: 403 with the same challenge, a JSON-RPC body",
        status == 403 and challenge(headers) == header and body.get("jsonrpc") == "2.0",
        f"{status} {challenge(headers)} {body}",
    )
    status, _, _, _ = request("GET", f"{BASE}/v1/operations/create_ticket/{key}", reader)
    check("the refused write used no key", status == 404)
    status, _, _, _ = mcp(reader, "tools/list")
    check("tools/list needs only tickets:read", status == 200)

    # Static tokens still work, and carry their scopes.
    status, _, _, _ = create(os.environ["ACME_TOKEN"])
    check("a static token still creates", status == 201)
    status, _, body, _ = mcp(os.environ["ACME_TOKEN"], "tools/call", {"name": "list_tickets", "arguments": {}})
    check("a static token still works over /mcp", status == 200, body)
    status, headers, _, _ = create(os.environ["ACME_READ_TOKEN"])
    check(
        "a static token issued with --scope tickets:read is 403 on a write",
        status == 403 and 'scope="tickets:write"' in challenge(headers),
        challenge(headers),
    )

    # An identity provider that is slow or down: 503 + Retry-After, bounded.
    for name, issuer in (("slow", SLOW), ("down", DOWN)):
        status, headers, body, took = create(mint({"iss": issuer}))
        check(
            f"a JWKS that is {name}: 503 auth-unavailable with Retry-After in {took:.2f} s",
            status == 503
            and headers.get("retry-after")
            and (body or {}).get("type") == "/problems/auth-unavailable"
            and took < 5,
            f"{status} {body}",
        )
        status, headers, body, took = mcp_create(mint({"iss": issuer}), str(uuid.uuid4()))
        check(
            f"a JWKS that is {name}, over /mcp: 503 JSON-RPC in {took:.2f} s",
            status == 503 and headers.get("retry-after") and body.get("jsonrpc") == "2.0" and took < 5,
            f"{status} {body}",
        )

    print(f"{results['passed']} passed, {results['failed']} failed")
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
