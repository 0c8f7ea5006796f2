-- The notes table; a second statement after the ';'.
CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
INSERT INTO notes (text) VALUES ('first; with a semicolon');
