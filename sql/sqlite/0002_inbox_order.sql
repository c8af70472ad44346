-- The inbox lists newest first with the id as tie-break (ORDER BY created_at DESC, id DESC). SQLite
-- indexes carry the rowid, not the text id, so without this every page sorted the whole table.
CREATE INDEX enquiries_created_id_idx ON enquiries (created_at, id);
