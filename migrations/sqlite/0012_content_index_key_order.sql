-- The likely-duplicate guard's index, with the key as its last column.
-- SQLite flavour; keep in step with
-- migrations/postgres/0012_content_index_key_order.sql.
--
-- The guard's read (kitchen/src/store/duplicates.rs) now orders the
-- earlier writes of one content by (created_at DESC, operation_key DESC),
-- and only this index yields that order without a sort. Why: on
-- PostgreSQL, until autovacuum first analyzes `operations` (a new
-- database's first minute), the planner estimates one row for every index
-- that starts with the tenant, and among indexes that also yield
-- `created_at DESC` it took the smaller one, the tenant's newest first
-- (operations_tenant_newest_idx): each connection then kept that plan for
-- the read, which read every operation of the tenant on every create
-- (5.4M-6.7M rows in 8 s of creates). With the key in the order, that
-- index needs a sort, and the read's transaction allows none. (SQLite's planner takes
-- this index by itself; the read's SQL is the same on both databases, and
-- the index keeps its order free of a sort here too.)
--
-- No row changes: the index is rebuilt with one more column, under the
-- same name. Writes to `operations` wait while it is built.
DROP INDEX operations_content_idx;
CREATE INDEX operations_content_idx
    ON operations (tenant_id, action, fingerprint, created_at DESC, operation_key DESC);
