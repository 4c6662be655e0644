// The authorization servers the OAuth script test runs against.
//
// `oauth2-mock-server` (npm, maintained, OIDC discovery, a JWKS, /authorize
// with PKCE that approves at once, /token for client_credentials and
// authorization_code) is the real server: the tickets server fetches its
// metadata and keys, and the Python MCP SDK signs in with it. It is
// configured here only through its documented events, to do what a
// production identity provider does and it does not by default:
//
// - the access token's `aud` is the resource the client asked for (RFC 8707
//   `resource`, on /authorize or /token);
// - its `scope` (in the token and the token response) is what the client
//   asked for at /authorize (the mock says "dummy" for authorization-code
//   grants otherwise);
// - a client_credentials token's `sub` is the client id (RFC 9068);
// - a user's token carries the tenant claim `org_id` (ORG, default acme).
//
// Beside it: a second, untrusted instance (its tokens must be refused), a
// "slow" issuer whose metadata answers but whose JWKS never does, and a
// control endpoint for the test driver: mint a token with the real
// server's keys and chosen claims, rotate its keys, make the next grants
// narrower (to drive a scope step-up), and count authorizations.
//
// Prints one JSON line with the addresses once everything listens.
// Usage: node auth_server.mjs   (OAUTH_MOCK_SERVER_ENTRY = the package's dist/index.mjs)

import http from "node:http";
import { pathToFileURL } from "node:url";

const { OAuth2Server } = await import(pathToFileURL(process.env.OAUTH_MOCK_SERVER_ENTRY).href);
const ORG = process.env.ORG ?? "acme";

async function startServer() {
  const server = new OAuth2Server();
  await server.issuer.keys.generate("RS256");
  await server.start(0, "127.0.0.1");
  // The mock names itself "localhost"; the address it listens on is exact.
  server.issuer.url = `http://127.0.0.1:${server.address().port}`;
  return server;
}
const trusted = await startServer();
const untrusted = await startServer();

// What each authorization code was asked for, to put into its token.
const asked = new Map();
let authorizations = 0;
trusted.service.on("beforeAuthorizeRedirect", (redirect, req) => {
  authorizations += 1;
  const code = redirect.url.searchParams.get("code");
  if (code) asked.set(code, { scope: req.query.scope, resource: req.query.resource });
});

// The next `times` access tokens grant only `scope` (a narrower consent).
let narrower = { scope: null, times: 0 };
const signed = new WeakSet();
const granted = new WeakMap();
trusted.service.on("beforeTokenSigning", (token, req) => {
  // The token endpoint signs the access token first, then (for user grants)
  // an ID token: only the first is the access token.
  if (signed.has(req)) return;
  signed.add(req);
  const body = req.body ?? {};
  const code = body.code !== undefined ? asked.get(body.code) : undefined;
  const resource = body.resource ?? code?.resource;
  if (resource !== undefined) token.payload.aud = resource;
  let scope = body.scope ?? code?.scope;
  if (narrower.times > 0) {
    scope = narrower.scope;
    narrower.times -= 1;
  }
  if (scope !== undefined) token.payload.scope = scope;
  granted.set(req, scope);
  if (body.grant_type === "client_credentials") {
    token.payload.sub = clientId(req);
  } else {
    token.payload.org_id = ORG;
  }
});

// The token response says what was granted, as the token does.
trusted.service.on("beforeResponse", (response, req) => {
  if (granted.has(req) && response.body) response.body.scope = granted.get(req);
});

function clientId(req) {
  const auth = req.headers.authorization ?? "";
  if (auth.toLowerCase().startsWith("basic ")) {
    const [id] = Buffer.from(auth.slice(6), "base64").toString().split(":");
    return decodeURIComponent(id);
  }
  return req.body?.client_id ?? "anonymous-client";
}

// An issuer whose metadata answers and whose keys never come.
const slow = http.createServer((req, res) => {
  const issuer = `http://127.0.0.1:${slow.address().port}`;
  if (req.url === "/.well-known/openid-configuration") {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
  } else if (req.url === "/jwks") {
    // Never answers; the connection is dropped when the client gives up.
  } else {
    res.statusCode = 404;
    res.end();
  }
});
await new Promise((ok) => slow.listen(0, "127.0.0.1", ok));

async function readJson(req) {
  let raw = "";
  for await (const chunk of req) raw += chunk;
  return raw ? JSON.parse(raw) : {};
}

const control = http.createServer(async (req, res) => {
  try {
    const body = req.method === "POST" ? await readJson(req) : {};
    let answer;
    if (req.url === "/mint") {
      // A token signed by the chosen server's own keys, with `claims` over
      // its defaults (`null` removes one); `kid` picks the key.
      const server = body.issuer === "untrusted" ? untrusted : trusted;
      const token = await server.issuer.buildToken({
        kid: body.kid,
        expiresIn: body.expiresIn ?? 3600,
        scopesOrTransform: (_header, payload) => {
          payload.sub = "johndoe";
          for (const [name, value] of Object.entries(body.claims ?? {})) {
            if (value === null) delete payload[name];
            else payload[name] = value;
          }
        },
      });
      answer = { token };
    } else if (req.url === "/rotate") {
      const key = await trusted.issuer.keys.generate("RS256");
      answer = { kid: key.kid };
    } else if (req.url === "/narrower") {
      narrower = { scope: body.scope, times: body.times ?? 1 };
      answer = narrower;
    } else if (req.url === "/info") {
      answer = {
        trusted: trusted.issuer.url,
        untrusted: untrusted.issuer.url,
        slow: `http://127.0.0.1:${slow.address().port}`,
        kids: trusted.issuer.keys.toJSON().map((k) => k.kid),
        authorizations,
      };
    } else {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(answer));
  } catch (e) {
    res.statusCode = 500;
    res.end(String(e));
  }
});
await new Promise((ok) => control.listen(0, "127.0.0.1", ok));

console.log(
  JSON.stringify({
    trusted: trusted.issuer.url,
    untrusted: untrusted.issuer.url,
    slow: `http://127.0.0.1:${slow.address().port}`,
    control: `http://127.0.0.1:${control.address().port}`,
  }),
);

const stop = async () => {
  await Promise.allSettled([trusted.stop(), untrusted.stop()]);
  slow.closeAllConnections?.();
  slow.close();
  control.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
