-- The lifecycle of an operation key: a replay window, then a tombstone,
-- then nothing. PostgreSQL flavour; keep in step with
-- migrations/sqlite/0004_key_lifecycle.sql, which explains each column.
--
-- Additive: existing records keep their promised window (retained_until
-- becomes replayable_until) and are remembered as tombstones until 400 days
-- after first use. Horizons are whole seconds, as the kitchen writes them.

ALTER TABLE operations
    ADD COLUMN replayable_until timestamptz,
    ADD COLUMN resource_id      uuid,
    ADD COLUMN tombstoned_at    timestamptz;

UPDATE operations SET
    replayable_until = date_trunc('second', retained_until)
        + CASE WHEN retained_until = date_trunc('second', retained_until)
               THEN interval '0' ELSE interval '1 second' END,
    retained_until = date_trunc('second', created_at) + interval '400 days'
        + CASE WHEN created_at = date_trunc('second', created_at)
               THEN interval '0' ELSE interval '1 second' END,
    resource_id = CASE
        WHEN action = 'add_comment' AND result_snapshot IS NOT NULL
            THEN (result_snapshot::jsonb ->> 'id')::uuid
        ELSE ticket_id
    END;

CREATE INDEX operations_replay_window_idx ON operations (replayable_until)
    WHERE tombstoned_at IS NULL;
