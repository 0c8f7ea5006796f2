CREATE TABLE `kv` (
	`extension` text NOT NULL,
	`key` text NOT NULL,
	`value` blob NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`extension`, `key`)
);
