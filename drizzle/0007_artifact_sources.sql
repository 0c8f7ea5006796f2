CREATE TABLE `artifacts` (
	`extension` text NOT NULL,
	`artifact_hash` text NOT NULL,
	`bytes` integer NOT NULL,
	`sources` text NOT NULL,
	`source_dir` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`extension`, `artifact_hash`)
);
--> statement-breakpoint
CREATE TABLE `source_files` (
	`sha256` text PRIMARY KEY NOT NULL,
	`content` blob NOT NULL
);
--> statement-breakpoint
ALTER TABLE `approvals` ADD `withheld_net` text DEFAULT '[]' NOT NULL;