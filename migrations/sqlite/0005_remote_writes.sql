-- Every write on the remote backend. SQLite flavour; keep in step with
-- migrations/postgres/0005_remote_writes.sql.
--
-- Additive: two nullable columns, nothing rewritten. Comments made before
-- this release were made locally and have no provider id; no effect has
-- been seen duplicated at a provider yet.

-- The provider's id for a comment made there (remote backend), as
-- tickets.provider_ticket_id is for a ticket.
ALTER TABLE ticket_comments ADD COLUMN provider_comment_id text;

-- When a search by external reference found the effect more than once at
-- the provider (something there made it twice), the provider's ids of the
-- copies besides the original, comma-separated, for an operator to
-- resolve; NULL when the provider holds it once.
ALTER TABLE operations ADD COLUMN provider_duplicates text;
