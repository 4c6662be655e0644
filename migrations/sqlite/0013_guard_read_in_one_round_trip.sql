-- Nothing changes on SQLite. PostgreSQL's migration of the same number
-- (migrations/postgres/0013_guard_read_in_one_round_trip.sql) makes the
-- likely-duplicate guard's read a function so that it costs one round
-- trip; SQLite has no round trips and keeps the read's SQL in
-- kitchen/src/store/duplicates.rs (EARLIER_WRITE). The numbers stay in
-- step so that a release's migrations are one list on both databases.
SELECT 1;
