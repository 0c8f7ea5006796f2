PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_invocations` (
	`id` integer PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`extension` text NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`strand` text DEFAULT '' NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`duration_ms` integer,
	`outcome` text NOT NULL,
	`owner` text,
	`hooks_bypassed` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_invocations`("id", "session_id", "extension", "kind", "name", "strand", "started_at", "finished_at", "duration_ms", "outcome", "owner", "hooks_bypassed") SELECT "id", "session_id", "extension", "kind", "name", "strand", "started_at", "finished_at", "duration_ms", "outcome", "owner", "hooks_bypassed" FROM `invocations`;--> statement-breakpoint
DROP TABLE `invocations`;--> statement-breakpoint
ALTER TABLE `__new_invocations` RENAME TO `invocations`;--> statement-breakpoint
PRAGMA foreign_keys=ON;