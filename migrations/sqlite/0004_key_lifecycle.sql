-- The lifecycle of an operation key: a replay window, then a tombstone,
-- then nothing. SQLite flavour; keep in step with
-- migrations/postgres/0004_key_lifecycle.sql.
--
-- Additive: three new columns, filled for existing rows. Until now a record
-- promised protection until retained_until (30 days by default); that
-- becomes its replay window, and every existing record is remembered as a
-- tombstone until 400 days after its first use (the new default horizon),
-- so no key that was ever used becomes free sooner than it was promised.
--
-- Times are RFC 3339 text (as sqlx writes them), compared as text by the
-- sweep; horizons are rounded up to whole seconds so that such a
-- comparison can only err towards keeping a record.

-- Until when a retry replays the frozen answer byte for byte.
ALTER TABLE operations ADD COLUMN replayable_until text;
-- What the operation made or acted on: the ticket, or for add_comment the
-- comment. Kept in the tombstone, so that an expired retry can be pointed
-- at it.
ALTER TABLE operations ADD COLUMN resource_id blob;
-- When the sweep dropped the frozen answer and request, keeping only the
-- tombstone (scope, fingerprint, resource, created_at, horizons).
ALTER TABLE operations ADD COLUMN tombstoned_at text;

UPDATE operations SET
    replayable_until = strftime('%Y-%m-%dT%H:%M:%SZ', retained_until,
        CASE WHEN retained_until LIKE '%.%' THEN '+1 second' ELSE '+0 seconds' END),
    retained_until = strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '+400 days',
        CASE WHEN created_at LIKE '%.%' THEN '+1 second' ELSE '+0 seconds' END),
    resource_id = CASE
        WHEN action = 'add_comment' AND result_snapshot IS NOT NULL
            THEN unhex(replace(json_extract(result_snapshot, '$.id'), '-', ''))
        ELSE ticket_id
    END;

-- The sweep's first queue: records whose replay window is over and that are
-- not tombstones yet. The existing index on retained_until is its second.
CREATE INDEX operations_replay_window_idx ON operations (replayable_until)
    WHERE tombstoned_at IS NULL;
