"""Schemathesis hooks for tests/hardening/schemathesis.sh (loaded through
SCHEMATHESIS_HOOKS). One hook, and why:

An Idempotency-Key names one intended request. The contract (and the IETF
Idempotency-Key draft) answers the same key with a *different* body with
`422 idempotency-key-reused`, and nothing in a schema can say "a key value
must not be reused with another body". Schemathesis draws header values
independently of bodies and repeats simple ones ("00000000" in most
cases), so without this hook every body after the first with that key is
a schema-valid request answered 422, which its positive-data check
(ST202) reports.

So, before each call of POST /v1/tickets, a valid key is bound to its body:
a short digest of the body is appended to it (inside the quotes of an
RFC 8941 quoted key), keeping it within the documented pattern and length.
The same key with the same body stays the same key, so the replays
schemathesis sends are still replays (a `201` with `Idempotent-Replayed`);
different bodies get different keys, as a correct client's would. A key
that is not valid is left alone, so the negative cases still reach the
server as drawn. No check is disabled.
"""

from __future__ import annotations

import hashlib
import json
import re

import schemathesis

HEADER = "Idempotency-Key"
MAX_LEN = 255
BARE = re.compile(r"[!#-~][!-~]{7,254}")
QUOTED = re.compile(r'"((?:[!#-\[\]-~]|\\["\\]){8,253})"')


def _digest(body) -> str:
    try:
        raw = json.dumps(body, sort_keys=True, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError):
        raw = repr(body)
    return "-" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _bind(key: str, suffix: str) -> str | None:
    if BARE.fullmatch(key):
        return key[: MAX_LEN - len(suffix)] + suffix
    match = QUOTED.fullmatch(key)
    if match:
        inner = re.sub(r"\\(.)", r"\1", match.group(1))
        while True:
            escaped = inner.replace("\\", "\\\\").replace('"', '\\"')
            bound = f'"{escaped}{suffix}"'
            if len(bound) <= MAX_LEN:
                return bound
            inner = inner[:-1]
    return None


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.method.upper() != "POST" or case.path != "/v1/tickets" or not case.headers:
        return
    name = next((n for n in case.headers if n.lower() == HEADER.lower()), None)
    if name is None or not isinstance(case.headers[name], str):
        return
    bound = _bind(case.headers[name], _digest(case.body))
    if bound is not None:
        case.headers[name] = bound
