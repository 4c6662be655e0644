-- Tenants, their API tokens, tickets, and the operation records that make
-- ticket creation retry-safe. PostgreSQL flavour; keep in step with
-- migrations/sqlite/0001_tenants_tickets_operations.sql.

CREATE TABLE tenants (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

-- Only the SHA-256 of a token is stored: the secret is shown once, at issue.
CREATE TABLE api_tokens (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL REFERENCES tenants (id),
    token_sha256 bytea       NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);

CREATE INDEX api_tokens_tenant_idx ON api_tokens (tenant_id);

-- Ticket ids are UUID v7, so ordering by id is ordering by creation time.
CREATE TABLE tickets (
    id          uuid        PRIMARY KEY,
    tenant_id   uuid        NOT NULL REFERENCES tenants (id),
    project_id  text        NOT NULL,
    title       text        NOT NULL,
    description text,
    priority    text        NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status      text        NOT NULL CHECK (status IN ('open')),
    created_at  timestamptz NOT NULL
);

CREATE INDEX tickets_tenant_newest_idx ON tickets (tenant_id, id DESC);
CREATE INDEX tickets_tenant_project_newest_idx ON tickets (tenant_id, project_id, id DESC);

-- One row per (tenant, action, key). The primary key is what decides
-- "placed" versus "replayed": a second INSERT of the same scope waits for the
-- first transaction and then finds the row, so no check-then-insert race exists.
--
-- ticket_id has no foreign key on purpose: a backend that creates tickets in
-- another system records that system's receipt here.
CREATE TABLE operations (
    tenant_id           uuid        NOT NULL REFERENCES tenants (id),
    action              text        NOT NULL,
    operation_key       text        NOT NULL,
    fingerprint_version smallint    NOT NULL,
    fingerprint         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN ('succeeded')),
    ticket_id           uuid,
    result_snapshot     text,
    created_at          timestamptz NOT NULL,
    retained_until      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, action, operation_key)
);

-- For the retention sweep: find records past their retention cheaply.
CREATE INDEX operations_retained_until_idx ON operations (retained_until);
