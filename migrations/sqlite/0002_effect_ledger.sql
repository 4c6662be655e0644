-- The effect ledger, for the remote ticket backend (tickets made in a
-- provider over HTTP). SQLite flavour; keep in step with
-- migrations/postgres/0002_effect_ledger.sql.
--
-- With a provider, our record and the remote write cannot commit together.
-- So the record is written ahead (state in_progress) and committed before the
-- provider is called, then moved to succeeded, failed_before_effect or
-- unknown. SQLite cannot change a CHECK constraint in place, hence the
-- rebuild of operations.

CREATE TABLE operations_v2 (
    tenant_id           blob        NOT NULL REFERENCES tenants (id),
    action              text        NOT NULL,
    operation_key       text        NOT NULL,
    fingerprint_version integer     NOT NULL,
    fingerprint         text        NOT NULL,
    state               text        NOT NULL CHECK (state IN
                            ('succeeded', 'in_progress', 'failed_before_effect', 'unknown')),
    ticket_id           blob,
    result_snapshot     text,
    created_at          text        NOT NULL,
    retained_until      text        NOT NULL,
    -- Remote backend only (NULL for local creates):
    -- the normalized request, so that a re-dispatch after a crash sends it.
    request_snapshot    text,
    -- Sent to the provider as its idempotency key and stored on its ticket
    -- as the searchable external reference. Derived from (tenant, action, key).
    external_ref        text,
    -- The provider's dedup window, recorded at the first dispatch: until then
    -- a re-dispatch with the same downstream key is deduplicated by the
    -- provider itself. NULL: the provider ignores keys; never trust them.
    key_trusted_until   text,
    first_dispatched_at text,
    last_dispatched_at  text,
    -- Why the effect failed before happening, or why it is unknown.
    state_detail        text,
    -- Who is dispatching or reconciling right now, until when (Unix ms):
    -- at most one worker per effect. A lease that ran out belongs to a worker
    -- that died (a crash after dispatch); the reconciler takes it over.
    lease_owner         blob,
    lease_until_ms      integer,
    -- When the background reconciler should look at this effect next (Unix ms).
    next_check_ms       integer,
    PRIMARY KEY (tenant_id, action, operation_key)
) STRICT;

INSERT INTO operations_v2 (tenant_id, action, operation_key, fingerprint_version, fingerprint,
                           state, ticket_id, result_snapshot, created_at, retained_until)
SELECT tenant_id, action, operation_key, fingerprint_version, fingerprint,
       state, ticket_id, result_snapshot, created_at, retained_until
FROM operations;

DROP TABLE operations;
ALTER TABLE operations_v2 RENAME TO operations;

CREATE INDEX operations_retained_until_idx ON operations (retained_until);
-- The reconciler's queue: only unsettled effects are in this index.
CREATE INDEX operations_unsettled_idx ON operations (next_check_ms)
    WHERE state IN ('in_progress', 'unknown');

-- Every call to the provider made for an effect: dispatches and lookups.
-- A caller's retry adds attempts here; it never adds a second effect.
CREATE TABLE operation_attempts (
    tenant_id     blob        NOT NULL,
    action        text        NOT NULL,
    operation_key text        NOT NULL,
    attempt_no    integer     NOT NULL,
    kind          text        NOT NULL CHECK (kind IN ('dispatch', 'lookup')),
    trigger       text        NOT NULL CHECK (trigger IN ('request', 'retry', 'status', 'background', 'startup')),
    started_at    text        NOT NULL,
    -- NULL while the call runs, and for ever if the server stopped during it.
    finished_at   text,
    result        text,
    detail        text,
    PRIMARY KEY (tenant_id, action, operation_key, attempt_no),
    FOREIGN KEY (tenant_id, action, operation_key)
        REFERENCES operations (tenant_id, action, operation_key) ON DELETE CASCADE
) STRICT;

-- The provider's id for a ticket made there.
ALTER TABLE tickets ADD COLUMN provider_ticket_id text;
