CREATE TABLE `folds` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`compaction_id` integer NOT NULL,
	`strategy` text NOT NULL,
	`extension` text NOT NULL,
	`from_index` integer NOT NULL,
	`to_index` integer NOT NULL,
	`text` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `folds_session` ON `folds` (`session_id`,`compaction_id`);--> statement-breakpoint
CREATE TABLE `strategy_preferences` (
	`session_id` text PRIMARY KEY NOT NULL,
	`strategy` text NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
