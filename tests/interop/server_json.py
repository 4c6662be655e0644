"""server.json (the description of this server for MCP registries), checked.

- Valid against the official MCP registry's server.json schema, version
  2025-12-11, vendored in schemas/ (the published file, pinned by its
  SHA-256, so that this check runs offline and a changed copy is noticed),
  and `$schema` names exactly that schema.
- Its version, and each package's, is the workspace's version (Cargo.toml):
  the one the server reports in `serverInfo`.
- Each package's argument is a subcommand of `tickets`, and each of its
  environment variables is a setting of that subcommand (`[env: NAME]` in
  its `--help`); TICKETS_TOKEN is marked secret.
- The remote is Streamable HTTP with the bearer `Authorization` header,
  marked secret.

Needs TICKETS_BIN (run.sh sets it). Prints one PASS/FAIL line per check
and a total.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib

from jsonschema import Draft7Validator, FormatChecker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(ROOT, "tests", "interop", "schemas", "server.schema.2025-12-11.json")
# The SHA-256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
TICKETS = os.environ["TICKETS_BIN"]

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from checks import check, finish  # noqa: E402


def help_of(*args):
    return subprocess.run(
        [TICKETS, *args, "--help"], check=True, capture_output=True, text=True
    ).stdout


def main():
    with open(SCHEMA, "rb") as f:
        raw = f.read()
    check("the vendored schema is the published one", hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256)
    schema = json.loads(raw)
    with open(os.path.join(ROOT, "server.json"), encoding="utf-8") as f:
        server = json.load(f)

    check("$schema names the schema", server.get("$schema") == schema["$id"], server.get("$schema"))
    errors = sorted(
        Draft7Validator(schema, format_checker=FormatChecker()).iter_errors(server),
        key=lambda e: list(e.absolute_path),
    )
    check(
        "valid against the registry's schema",
        not errors,
        "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors),
    )

    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        version = tomllib.load(f)["workspace"]["package"]["version"]
    check("its version is the workspace's", server.get("version") == version, f"{server.get('version')} != {version}")

    subcommands = help_of()
    for i, package in enumerate(server.get("packages", [])):
        tag = f"[package {i}: {package.get('registryType')} {package.get('identifier')}]"
        check(f"{tag} version is the workspace's", package.get("version") == version, str(package.get("version")))
        check(f"{tag} runs over stdio", package.get("transport", {}).get("type") == "stdio")
        args = [a.get("value") for a in package.get("packageArguments", [])]
        check(f"{tag} its argument is one subcommand", len(args) == 1, str(args))
        if len(args) != 1:
            continue
        check(
            f"{tag} {args[0]} is a subcommand of tickets",
            re.search(rf"^\s+{re.escape(args[0])}\s", subcommands, re.M) is not None,
            subcommands,
        )
        settings = set(re.findall(r"\[env: ([A-Z0-9_]+)", help_of(args[0])))
        variables = {v["name"]: v for v in package.get("environmentVariables", [])}
        for name, variable in variables.items():
            check(f"{tag} {name} is a setting of {args[0]}", name in settings, str(sorted(settings)))
        check(
            f"{tag} names DATABASE_URL and TICKETS_TOKEN",
            {"DATABASE_URL", "TICKETS_TOKEN"} <= set(variables),
            str(sorted(variables)),
        )
        check(
            f"{tag} TICKETS_TOKEN is a secret",
            variables.get("TICKETS_TOKEN", {}).get("isSecret") is True,
        )

    remotes = server.get("remotes", [])
    check("one remote", len(remotes) == 1, str(remotes))
    for remote in remotes:
        check("the remote is Streamable HTTP at /mcp", remote.get("type") == "streamable-http" and remote.get("url", "").endswith("/mcp"), str(remote))
        headers = {h["name"]: h for h in remote.get("headers", [])}
        authorization = headers.get("Authorization", {})
        check(
            "the remote sends a bearer Authorization header, secret",
            authorization.get("value", "").startswith("Bearer {")
            and authorization.get("isSecret") is True
            and authorization.get("isRequired") is True,
            str(authorization),
        )

    finish()


if __name__ == "__main__":
    main()
