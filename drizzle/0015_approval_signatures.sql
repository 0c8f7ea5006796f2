ALTER TABLE `approvals` ADD `signature` text;--> statement-breakpoint
ALTER TABLE `approvals` ADD `revocation_signature` text;