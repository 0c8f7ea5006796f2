CREATE TABLE `hook_traces` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`event` text NOT NULL,
	`subject` text DEFAULT '' NOT NULL,
	`about_invocation_id` integer,
	`hook_invocation_id` integer,
	`extension` text NOT NULL,
	`answer` text NOT NULL,
	`detail` text DEFAULT '' NOT NULL,
	`duration_ms` real NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `hook_traces_session` ON `hook_traces` (`session_id`);--> statement-breakpoint
CREATE INDEX `hook_traces_about` ON `hook_traces` (`about_invocation_id`);