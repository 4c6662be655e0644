-- The ticket lifecycle: edits (with a version per ticket), the status
-- machine, comments, and each ticket's history. SQLite flavour; keep in step
-- with migrations/postgres/0003_ticket_lifecycle.sql.
--
-- SQLite cannot change a CHECK constraint in place, hence the rebuild of
-- tickets (no table refers to it yet, so nothing else moves). Every existing
-- row is copied: it becomes version 1, unassigned, never updated.

CREATE TABLE tickets_v3 (
    id                 blob    PRIMARY KEY,
    tenant_id          blob    NOT NULL REFERENCES tenants (id),
    project_id         text    NOT NULL,
    title              text    NOT NULL,
    description        text,
    priority           text    NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status             text    NOT NULL CHECK (status IN ('open', 'in_progress', 'resolved', 'closed')),
    created_at         text    NOT NULL,
    provider_ticket_id text,
    -- A person's name, free text; NULL when nobody is assigned.
    assignee           text,
    -- 1 at creation, +1 for every change; REST shows it as the ETag, and a
    -- conditional write (If-Match, expected_version) compares against it.
    version            integer NOT NULL DEFAULT 1,
    -- When the ticket last changed; NULL until its first change.
    updated_at         text
) STRICT;

INSERT INTO tickets_v3 (id, tenant_id, project_id, title, description, priority, status,
                        created_at, provider_ticket_id)
    SELECT id, tenant_id, project_id, title, description, priority, status,
           created_at, provider_ticket_id
    FROM tickets;

DROP TABLE tickets;
ALTER TABLE tickets_v3 RENAME TO tickets;

CREATE INDEX tickets_tenant_newest_idx ON tickets (tenant_id, id DESC);
CREATE INDEX tickets_tenant_project_newest_idx ON tickets (tenant_id, project_id, id DESC);

-- Comments, oldest first by their UUID v7 id.
CREATE TABLE ticket_comments (
    id         blob PRIMARY KEY,
    tenant_id  blob NOT NULL REFERENCES tenants (id),
    ticket_id  blob NOT NULL REFERENCES tickets (id),
    body       text NOT NULL,
    created_at text NOT NULL
) STRICT;

CREATE INDEX ticket_comments_ticket_oldest_idx ON ticket_comments (ticket_id, id);

-- One row per change to a ticket, written in the transaction that made the
-- change, with the operation key that asked for it. A replay writes nothing,
-- so it adds no row. Ids are UUID v7: ordering by id is ordering in time, and
-- concurrent writers never compete for a sequence number.
CREATE TABLE ticket_history (
    id             blob    PRIMARY KEY,
    tenant_id      blob    NOT NULL REFERENCES tenants (id),
    ticket_id      blob    NOT NULL REFERENCES tickets (id),
    action         text    NOT NULL,
    operation_key  text    NOT NULL,
    -- The API token the caller authenticated with, when known.
    actor_token_id blob,
    -- What changed, as JSON: {"field": {"from": ..., "to": ...}, ...}.
    changes        text    NOT NULL,
    -- The ticket's version after the change.
    version        integer NOT NULL,
    recorded_at    text    NOT NULL
) STRICT;

CREATE INDEX ticket_history_ticket_oldest_idx ON ticket_history (ticket_id, id);
