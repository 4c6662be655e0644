-- A create's description, stored once. SQLite flavour; keep in step with
-- migrations/postgres/0011_text_stored_once.sql.
--
-- A create's frozen answer (on its operation record) and its first history
-- entry each held the ticket's description besides the ticket itself. From
-- now on they are stored around it: the text before the description's JSON
-- string stays in `result_snapshot` / `changes`, the text after it goes to
-- the new `*_tail` column, and the description comes from the ticket when
-- the row is read (kitchen/src/store/shared_text.rs). A row with a NULL
-- tail is whole, as every row was before.
--
-- Additive: two nullable columns. Then existing creates are cut the same
-- way, in place, where the ticket still has the description the row holds
-- (a ticket whose description changed since keeps whole rows). A row is cut
-- only where the description, written as JSON by SQLite (json_quote), is
-- found exactly once after its key: where it is found, it is byte for byte
-- what the service wrote and will write back, so the frozen answer reads
-- back unchanged.

ALTER TABLE operations ADD COLUMN result_snapshot_tail text;
ALTER TABLE ticket_history ADD COLUMN changes_tail text;

UPDATE operations
SET result_snapshot_tail = substr(result_snapshot,
        instr(result_snapshot, n.needle) + length(n.needle)),
    result_snapshot = substr(result_snapshot, 1,
        instr(result_snapshot, n.needle) - 1 + length('"description":'))
FROM (SELECT tenant_id, id, '"description":' || json_quote(description) AS needle
      FROM tickets WHERE description IS NOT NULL) AS n
WHERE operations.action = 'create_ticket'
  AND operations.result_snapshot IS NOT NULL
  AND operations.result_snapshot_tail IS NULL
  AND n.tenant_id = operations.tenant_id AND n.id = operations.ticket_id
  AND instr(operations.result_snapshot, n.needle) > 0
  AND instr(substr(operations.result_snapshot,
        instr(operations.result_snapshot, n.needle) + 1), n.needle) = 0;

UPDATE ticket_history
SET changes_tail = substr(changes, instr(changes, n.needle) + length(n.needle)),
    changes = substr(changes, 1,
        instr(changes, n.needle) - 1 + length('"description":{"from":null,"to":'))
FROM (SELECT tenant_id, id,
             '"description":{"from":null,"to":' || json_quote(description) AS needle
      FROM tickets WHERE description IS NOT NULL) AS n
WHERE ticket_history.action = 'create_ticket'
  AND ticket_history.changes_tail IS NULL
  AND n.tenant_id = ticket_history.tenant_id AND n.id = ticket_history.ticket_id
  AND instr(ticket_history.changes, n.needle) > 0
  AND instr(substr(ticket_history.changes,
        instr(ticket_history.changes, n.needle) + 1), n.needle) = 0;
