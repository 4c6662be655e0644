-- Tenants, their API tokens, tickets, and the operation records that make
-- ticket creation retry-safe. SQLite flavour (STRICT tables); keep in step with
-- migrations/postgres/0001_tenants_tickets_operations.sql.

CREATE TABLE tenants (
    id         blob        PRIMARY KEY,
    name       text        NOT NULL UNIQUE,
    created_at text        NOT NULL
) STRICT;

-- Only the SHA-256 of a token is stored: the secret is shown once, at issue.
CREATE TABLE api_tokens (
    id           blob        PRIMARY KEY,
    tenant_id    blob        NOT NULL REFERENCES tenants (id),
    token_sha256 blob        NOT NULL UNIQUE,
    created_at   text        NOT NULL,
    revoked_at   text
) STRICT;

CREATE INDEX api_tokens_tenant_idx ON api_tokens (tenant_id);

-- Ticket ids are UUID v7, so ordering by id is ordering by creation time.
CREATE TABLE tickets (
    id          blob        PRIMARY KEY,
    tenant_id   blob        NOT NULL REFERENCES tenants (id),
    project_id  text        NOT NULL,
    title       text        NOT NULL,
    description text,
    priority    text        NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status      text        NOT NULL CHECK (status IN ('open')),
    created_at  text        NOT NULL
) STRICT;

CREATE INDEX tickets_tenant_newest_idx ON tickets (tenant_id, id DESC);
CREATE INDEX tickets_tenant_project_newest_idx ON tickets (tenant_id, project_id, id DESC);

-- One row per (tenant, action, key). The primary key is what decides
-- "placed" versus "replayed". Every create runs in BEGIN IMMEDIATE, which takes
-- the database's write lock, so a second claim of the same scope runs after the
-- first has committed and finds the row: no check-then-insert race exists.
--
-- ticket_id has no foreign key on purpose: a backend that creates tickets in
-- another system records that system's receipt here.
CREATE TABLE operations (
    tenant_id           blob        NOT NULL REFERENCES tenants (id),
    action              text        NOT NULL,
    operation_key       text        NOT NULL,
    fingerprint_version integer     NOT NULL,
    fingerprint         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('succeeded')),
    ticket_id           blob,
    result_snapshot     text,
    created_at          text        NOT NULL,
    retained_until      text        NOT NULL,
    PRIMARY KEY (tenant_id, action, operation_key)
) STRICT;

-- For the retention sweep: find records past their retention cheaply.
CREATE INDEX operations_retained_until_idx ON operations (retained_until);
