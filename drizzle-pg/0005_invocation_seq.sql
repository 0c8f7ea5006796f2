CREATE TABLE "ledger_reservations" (
	"name" text PRIMARY KEY NOT NULL,
	"last" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "fleet_invocations" ADD COLUMN "seq" bigint;--> statement-breakpoint
ALTER TABLE "invocations" ADD COLUMN "seq" bigint;--> statement-breakpoint
CREATE INDEX "fleet_invocations_host_seq" ON "fleet_invocations" USING btree ("host","seq");--> statement-breakpoint
CREATE INDEX "invocations_seq" ON "invocations" USING btree ("seq");