-- The likely-duplicate guard. SQLite flavour; keep in step with
-- migrations/postgres/0010_duplicate_guard.sql.
--
-- Additive: one nullable column and one index; no existing row changes.

-- A tenant's own guard mode, set by `tickets tenant guard`; NULL: the
-- deployment's (DUPLICATE_GUARD).
ALTER TABLE tenants ADD COLUMN duplicate_guard text
    CHECK (duplicate_guard IN ('off', 'warn', 'confirm'));

-- A new write looks for a recent one with the same content under another
-- key: same tenant, action and fingerprint, newest first.
CREATE INDEX operations_content_idx
    ON operations (tenant_id, action, fingerprint, created_at DESC);
