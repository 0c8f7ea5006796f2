CREATE TABLE `search_preferences` (
	`session_id` text PRIMARY KEY NOT NULL,
	`rank` text NOT NULL,
	`exclude` text NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
