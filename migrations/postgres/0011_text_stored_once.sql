-- A create's description, stored once. PostgreSQL flavour; keep in step
-- with migrations/sqlite/0011_text_stored_once.sql.
--
-- A create's frozen answer (on its operation record) and its first history
-- entry each held the ticket's description besides the ticket itself. From
-- now on they are stored around it: the text before the description's JSON
-- string stays in `result_snapshot` / `changes`, the text after it goes to
-- the new `*_tail` column, and the description comes from the ticket when
-- the row is read (kitchen/src/store/shared_text.rs). A row with a NULL
-- tail is whole, as every row was before.
--
-- Additive: two nullable columns (no table rewrite). Then existing creates
-- are cut the same way, in place, where the ticket still has the
-- description the row holds (a ticket whose description changed since
-- keeps whole rows). A row is cut only where the description, written as
-- JSON by PostgreSQL (to_json), is found exactly once after its key: where
-- it is found, it is byte for byte what the service wrote and will write
-- back, so the frozen answer reads back unchanged. The cut rows are
-- rewritten once; VACUUM (autovacuum) makes their old versions' space
-- reusable.

ALTER TABLE operations ADD COLUMN result_snapshot_tail text;
ALTER TABLE ticket_history ADD COLUMN changes_tail text;

UPDATE operations AS o
SET result_snapshot_tail = substr(o.result_snapshot,
        strpos(o.result_snapshot, n.needle) + length(n.needle)),
    result_snapshot = substr(o.result_snapshot, 1,
        strpos(o.result_snapshot, n.needle) - 1 + length('"description":'))
FROM (SELECT tenant_id, id, '"description":' || to_json(description)::text AS needle
      FROM tickets WHERE description IS NOT NULL) AS n
WHERE o.action = 'create_ticket'
  AND o.result_snapshot IS NOT NULL
  AND o.result_snapshot_tail IS NULL
  AND n.tenant_id = o.tenant_id AND n.id = o.ticket_id
  AND strpos(o.result_snapshot, n.needle) > 0
  AND strpos(substr(o.result_snapshot, strpos(o.result_snapshot, n.needle) + 1), n.needle) = 0;

UPDATE ticket_history AS h
SET changes_tail = substr(h.changes, strpos(h.changes, n.needle) + length(n.needle)),
    changes = substr(h.changes, 1,
        strpos(h.changes, n.needle) - 1 + length('"description":{"from":null,"to":'))
FROM (SELECT tenant_id, id,
             '"description":{"from":null,"to":' || to_json(description)::text AS needle
      FROM tickets WHERE description IS NOT NULL) AS n
WHERE h.action = 'create_ticket'
  AND h.changes_tail IS NULL
  AND n.tenant_id = h.tenant_id AND n.id = h.ticket_id
  AND strpos(h.changes, n.needle) > 0
  AND strpos(substr(h.changes, strpos(h.changes, n.needle) + 1), n.needle) = 0;
