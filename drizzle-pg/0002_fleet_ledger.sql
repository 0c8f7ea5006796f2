CREATE TABLE "fleet_cap_audit" (
	"host" text NOT NULL,
	"id" bigint NOT NULL,
	"invocation_id" bigint,
	"session_id" text NOT NULL,
	"extension" text NOT NULL,
	"capability" text NOT NULL,
	"target" text DEFAULT '' NOT NULL,
	"decision" text NOT NULL,
	"rule" text NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"secret" text,
	"at" bigint NOT NULL,
	CONSTRAINT "fleet_cap_audit_host_id_pk" PRIMARY KEY("host","id")
);
--> statement-breakpoint
CREATE TABLE "fleet_hook_traces" (
	"host" text NOT NULL,
	"id" bigint NOT NULL,
	"session_id" text NOT NULL,
	"event" text NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"about_invocation_id" bigint,
	"hook_invocation_id" bigint,
	"extension" text NOT NULL,
	"answer" text NOT NULL,
	"detail" text DEFAULT '' NOT NULL,
	"duration_ms" double precision NOT NULL,
	"at" bigint NOT NULL,
	CONSTRAINT "fleet_hook_traces_host_id_pk" PRIMARY KEY("host","id")
);
--> statement-breakpoint
CREATE TABLE "fleet_invocations" (
	"host" text NOT NULL,
	"id" bigint NOT NULL,
	"session_id" text NOT NULL,
	"extension" text NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"strand" text DEFAULT '' NOT NULL,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"duration_ms" bigint,
	"outcome" text NOT NULL,
	"owner" text,
	"hooks_bypassed" boolean DEFAULT false NOT NULL,
	CONSTRAINT "fleet_invocations_host_id_pk" PRIMARY KEY("host","id")
);
--> statement-breakpoint
CREATE TABLE "session_leases" (
	"session_id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"acquired_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "fleet_invocations_host_outcome" ON "fleet_invocations" USING btree ("host","outcome");--> statement-breakpoint
CREATE INDEX "fleet_invocations_session" ON "fleet_invocations" USING btree ("session_id");