-- The ticket lifecycle: edits (with a version per ticket), the status
-- machine, comments, and each ticket's history. PostgreSQL flavour; keep in
-- step with migrations/sqlite/0003_ticket_lifecycle.sql, which explains
-- each column. Additive: existing tickets become version 1, unassigned.

ALTER TABLE tickets DROP CONSTRAINT tickets_status_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_status_check CHECK (status IN
    ('open', 'in_progress', 'resolved', 'closed'));

ALTER TABLE tickets
    ADD COLUMN assignee   text,
    ADD COLUMN version    bigint      NOT NULL DEFAULT 1,
    ADD COLUMN updated_at timestamptz;

CREATE TABLE ticket_comments (
    id         uuid        PRIMARY KEY,
    tenant_id  uuid        NOT NULL REFERENCES tenants (id),
    ticket_id  uuid        NOT NULL REFERENCES tickets (id),
    body       text        NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE INDEX ticket_comments_ticket_oldest_idx ON ticket_comments (ticket_id, id);

CREATE TABLE ticket_history (
    id             uuid        PRIMARY KEY,
    tenant_id      uuid        NOT NULL REFERENCES tenants (id),
    ticket_id      uuid        NOT NULL REFERENCES tickets (id),
    action         text        NOT NULL,
    operation_key  text        NOT NULL,
    actor_token_id uuid,
    changes        text        NOT NULL,
    version        bigint      NOT NULL,
    recorded_at    timestamptz NOT NULL
);

CREATE INDEX ticket_history_ticket_oldest_idx ON ticket_history (ticket_id, id);
