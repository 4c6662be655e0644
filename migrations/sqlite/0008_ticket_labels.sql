-- Labels on a ticket (add_label, remove_label). SQLite flavour; keep in step
-- with migrations/postgres/0008_ticket_labels.sql. Additive: one column with a
-- default, so every existing ticket reads as having no labels.

-- The ticket's labels as a JSON array of strings, alphabetical, each at
-- most once (at most 20, each of [a-z0-9-]): read and written with the
-- rest of the ticket, so a label change bumps the version like any edit.
-- The list filter matches the quoted label inside it.
ALTER TABLE tickets ADD COLUMN labels text NOT NULL DEFAULT '[]';
