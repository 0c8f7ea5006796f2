ALTER TABLE "approvals" ADD COLUMN "signature" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "revocation_signature" text;