-- What operators need: a list of a tenant's operations, and a record of
-- every effect a person settled by hand. SQLite flavour; keep in step with
-- migrations/postgres/0009_operator_settlements.sql.
--
-- Additive: one index and one new table; no existing row changes.

-- GET /v1/operations pages a tenant's operations newest first.
CREATE INDEX operations_tenant_newest_idx ON operations (tenant_id, created_at DESC);

-- The audit trail of `tickets ops settle`: who decided what about an effect
-- whose outcome reconciliation could not learn, when, why, and what the
-- service saw at the provider when they did. Written in the same
-- transaction as the decision it records; forgotten with its operation.
CREATE TABLE operation_settlements (
    tenant_id          blob        NOT NULL,
    action             text        NOT NULL,
    operation_key      text        NOT NULL,
    settled_at         text        NOT NULL,
    -- made: the provider holds the effect as provider_reference, and the
    -- operation succeeded with it; not_made: the provider never made it,
    -- and the operation failed before its effect (a retry sends it); kept: the
    -- provider held a succeeded effect more than once, and a person removed
    -- the copies there, keeping provider_reference.
    decision           text        NOT NULL CHECK (decision IN ('made', 'not_made', 'kept')),
    provider_reference text,
    decided_by         text        NOT NULL,
    reason             text        NOT NULL,
    -- What a search of the provider found when it was settled.
    provider_check     text        NOT NULL,
    -- 1 when the operator overrode what that search found (--force).
    forced             integer     NOT NULL CHECK (forced IN (0, 1)),
    PRIMARY KEY (tenant_id, action, operation_key, settled_at),
    FOREIGN KEY (tenant_id, action, operation_key)
        REFERENCES operations (tenant_id, action, operation_key) ON DELETE CASCADE
) STRICT;
