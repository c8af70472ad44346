-- The inbox lists newest first with the id as tie-break (ORDER BY created_at DESC, id DESC).
-- InnoDB's enquiries_created_at_idx already ends with the primary key; this index keeps the two
-- dialects' schemas identical (test/mysql/schema-parity.test.ts) and is re-runnable.
CREATE INDEX IF NOT EXISTS enquiries_created_id_idx ON enquiries (created_at, id);
