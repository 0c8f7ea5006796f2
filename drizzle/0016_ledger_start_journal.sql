CREATE TABLE `ledger_reservations` (
	`name` text PRIMARY KEY NOT NULL,
	`last` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `invocations` ADD `seq` integer;--> statement-breakpoint
-- Rows from before the start journal were committed in id order.
UPDATE `invocations` SET `seq` = `id`;--> statement-breakpoint
CREATE INDEX `invocations_seq` ON `invocations` (`seq`);