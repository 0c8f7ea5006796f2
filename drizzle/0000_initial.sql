CREATE TABLE `approvals` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`extension` text NOT NULL,
	`manifest_hash` text NOT NULL,
	`artifact_hash` text NOT NULL,
	`grants` text NOT NULL,
	`approved_by` text NOT NULL,
	`approved_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `approvals_extension` ON `approvals` (`extension`);--> statement-breakpoint
CREATE TABLE `cap_audit` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`invocation_id` integer,
	`session_id` text NOT NULL,
	`extension` text NOT NULL,
	`capability` text NOT NULL,
	`target` text DEFAULT '' NOT NULL,
	`decision` text NOT NULL,
	`rule` text NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `cap_audit_extension` ON `cap_audit` (`extension`);--> statement-breakpoint
CREATE INDEX `cap_audit_at` ON `cap_audit` (`at`);--> statement-breakpoint
CREATE TABLE `installs` (
	`name` text PRIMARY KEY NOT NULL,
	`version` text NOT NULL,
	`description` text NOT NULL,
	`manifest_text` text NOT NULL,
	`manifest_hash` text NOT NULL,
	`artifact_path` text NOT NULL,
	`artifact_hash` text NOT NULL,
	`source_dir` text NOT NULL,
	`installed_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `invocations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`session_id` text NOT NULL,
	`extension` text NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`strand` text DEFAULT '' NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`duration_ms` integer,
	`outcome` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `invocations_session` ON `invocations` (`session_id`);--> statement-breakpoint
CREATE INDEX `invocations_extension` ON `invocations` (`extension`);--> statement-breakpoint
CREATE TABLE `preferences` (
	`scope` text NOT NULL,
	`extension` text NOT NULL,
	`enabled` integer NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`scope`, `extension`)
);
--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace` text NOT NULL,
	`policy` text DEFAULT '{}' NOT NULL,
	`opened_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`closed_at` integer
);
