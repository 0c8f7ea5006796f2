CREATE TABLE `extension_inits` (
	`extension` text NOT NULL,
	`artifact_hash` text NOT NULL,
	`manifest_hash` text NOT NULL,
	`version` text NOT NULL,
	`ran_at` integer,
	`message` text,
	`error` text,
	`failed_at` integer,
	PRIMARY KEY(`extension`, `artifact_hash`, `manifest_hash`)
);
