CREATE TABLE `extension_migrations` (
	`extension` text NOT NULL,
	`number` integer NOT NULL,
	`name` text NOT NULL,
	`sha256` text NOT NULL,
	`applied_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`version` text NOT NULL,
	PRIMARY KEY(`extension`, `number`)
);
