-- The likely-duplicate guard's read as a function, so that a create pays
-- one round trip for it. PostgreSQL flavour; the SQLite flavour
-- (migrations/sqlite/0013_guard_read_in_one_round_trip.sql) changes
-- nothing, and the read's SQL there is kitchen/src/store/duplicates.rs's
-- EARLIER_WRITE: keep the two in step.
--
-- Why a function: the read needs sorts off while it is planned (until
-- autovacuum first analyzes `operations`, the planner estimates one row
-- for every index that starts with the tenant and would take a smaller
-- index and a sort over operations_content_idx; migration 0012 says more).
-- Turning them off for one statement took a transaction of its own: BEGIN
-- with the settings, the read, ROLLBACK, three round trips per create. A
-- function's SET clauses hold while it runs, its query's plan included, and
-- PL/pgSQL keeps that plan per connection as a prepared statement would:
-- one statement, no transaction.
--
-- Additive: one function; no table or row changes.
CREATE FUNCTION guard_earlier_write(
    p_tenant_id uuid,
    p_action text,
    p_fingerprint text,
    p_fingerprint_version smallint,
    p_operation_key text,
    p_since timestamptz
)
RETURNS TABLE (
    earlier_key text,
    earlier_state text,
    earlier_ticket_id uuid,
    earlier_resource_id uuid,
    earlier_created_at timestamptz
)
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET enable_incremental_sort = off
AS $$
BEGIN
    -- The newest write of the tenant, action and content under another key
    -- since p_since that happened or may still happen. The key breaks a tie
    -- of created_at; being in the order, it leaves operations_content_idx
    -- the only index that yields the order without a sort.
    RETURN QUERY
    SELECT o.operation_key, o.state, o.ticket_id, o.resource_id, o.created_at
    FROM operations o
    WHERE o.tenant_id = p_tenant_id AND o.action = p_action
      AND o.fingerprint = p_fingerprint AND o.fingerprint_version = p_fingerprint_version
      AND o.operation_key <> p_operation_key AND o.created_at >= p_since
      AND o.state IN ('succeeded', 'in_progress', 'unknown')
    ORDER BY o.created_at DESC, o.operation_key DESC
    LIMIT 1;
END
$$;
