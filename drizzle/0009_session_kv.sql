CREATE TABLE `session_kv` (
	`extension` text NOT NULL,
	`session_id` text NOT NULL,
	`key` text NOT NULL,
	`value` blob NOT NULL,
	`encoding` text DEFAULT 'bytes' NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`extension`, `session_id`, `key`)
);
