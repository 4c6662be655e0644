-- Every write on the remote backend. PostgreSQL flavour; keep in step with
-- migrations/sqlite/0005_remote_writes.sql, which explains each column.
--
-- Additive: two nullable columns, nothing rewritten.

ALTER TABLE ticket_comments ADD COLUMN provider_comment_id text;

ALTER TABLE operations ADD COLUMN provider_duplicates text;
