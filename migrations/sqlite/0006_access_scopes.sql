-- Access scopes and identity-provider subjects (issue 18). SQLite flavour;
-- keep in step with migrations/postgres/0006_access_scopes.sql. Additive:
-- nothing is rewritten.

-- What each API token may do, as a space-separated list of scopes. Tokens
-- issued before this migration keep doing everything.
ALTER TABLE api_tokens ADD COLUMN scopes text NOT NULL DEFAULT 'tickets:read tickets:write';

-- An identity provider's subject mapped by an operator to a tenant
-- (`tickets oauth map`). The issuer is compared as an exact string, as the
-- token's `iss` is.
CREATE TABLE oauth_subjects (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    tenant_id  blob NOT NULL REFERENCES tenants (id),
    created_at text NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;

CREATE INDEX oauth_subjects_tenant_idx ON oauth_subjects (tenant_id);
