-- The readiness probe's one row (issue 25). PostgreSQL flavour; keep in
-- step with migrations/sqlite/0007_write_probe.sql. Additive: a new table.

-- While writes are failing for want of a writable database (a full disk,
-- a read-only standby after a failover), /readyz commits this row to learn
-- whether the database can store something again. It never holds more
-- than one row.
CREATE TABLE write_probe (
    id        integer PRIMARY KEY CHECK (id = 1),
    probed_at timestamptz NOT NULL
);
