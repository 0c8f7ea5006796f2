-- Pinned notes are listed first (1.1.0).
ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
