-- The effect ledger, for the remote ticket backend (tickets made in a
-- provider over HTTP). PostgreSQL flavour; keep in step with
-- migrations/sqlite/0002_effect_ledger.sql, which explains each column.

ALTER TABLE operations DROP CONSTRAINT operations_state_check;
ALTER TABLE operations ADD CONSTRAINT operations_state_check CHECK (state IN
    ('succeeded', 'in_progress', 'failed_before_effect', 'unknown'));

ALTER TABLE operations
    ADD COLUMN request_snapshot    text,
    ADD COLUMN external_ref        text,
    ADD COLUMN key_trusted_until   timestamptz,
    ADD COLUMN first_dispatched_at timestamptz,
    ADD COLUMN last_dispatched_at  timestamptz,
    ADD COLUMN state_detail        text,
    ADD COLUMN lease_owner         uuid,
    ADD COLUMN lease_until_ms      bigint,
    ADD COLUMN next_check_ms       bigint;

-- The reconciler's queue: only unsettled effects are in this index.
CREATE INDEX operations_unsettled_idx ON operations (next_check_ms)
    WHERE state IN ('in_progress', 'unknown');

-- Every call to the provider made for an effect: dispatches and lookups.
-- A caller's retry adds attempts here; it never adds a second effect.
CREATE TABLE operation_attempts (
    tenant_id     uuid        NOT NULL,
    action        text        NOT NULL,
    operation_key text        NOT NULL,
    attempt_no    integer     NOT NULL,
    kind          text        NOT NULL CHECK (kind IN ('dispatch', 'lookup')),
    trigger       text        NOT NULL CHECK (trigger IN ('request', 'retry', 'status', 'background', 'startup')),
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz,
    result        text,
    detail        text,
    PRIMARY KEY (tenant_id, action, operation_key, attempt_no),
    FOREIGN KEY (tenant_id, action, operation_key)
        REFERENCES operations (tenant_id, action, operation_key) ON DELETE CASCADE
);

-- The provider's id for a ticket made there.
ALTER TABLE tickets ADD COLUMN provider_ticket_id text;
