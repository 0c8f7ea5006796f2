CREATE TABLE "approvals" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"extension" text NOT NULL,
	"manifest_hash" text NOT NULL,
	"artifact_hash" text NOT NULL,
	"grants" text NOT NULL,
	"approved_by" text NOT NULL,
	"approved_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"revoked_at" bigint,
	"withheld_net" text DEFAULT '[]' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "artifacts" (
	"extension" text NOT NULL,
	"artifact_hash" text NOT NULL,
	"bytes" bigint NOT NULL,
	"sources" text NOT NULL,
	"source_dir" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	CONSTRAINT "artifacts_extension_artifact_hash_pk" PRIMARY KEY("extension","artifact_hash")
);
--> statement-breakpoint
CREATE TABLE "cap_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"invocation_id" bigint,
	"session_id" text NOT NULL,
	"extension" text NOT NULL,
	"capability" text NOT NULL,
	"target" text DEFAULT '' NOT NULL,
	"decision" text NOT NULL,
	"rule" text NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"secret" text,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "extension_inits" (
	"extension" text NOT NULL,
	"artifact_hash" text NOT NULL,
	"manifest_hash" text NOT NULL,
	"version" text NOT NULL,
	"ran_at" bigint,
	"message" text,
	"error" text,
	"failed_at" bigint,
	CONSTRAINT "extension_inits_extension_artifact_hash_manifest_hash_pk" PRIMARY KEY("extension","artifact_hash","manifest_hash")
);
--> statement-breakpoint
CREATE TABLE "extension_migrations" (
	"extension" text NOT NULL,
	"number" bigint NOT NULL,
	"name" text NOT NULL,
	"sha256" text NOT NULL,
	"applied_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"version" text NOT NULL,
	CONSTRAINT "extension_migrations_extension_number_pk" PRIMARY KEY("extension","number")
);
--> statement-breakpoint
CREATE TABLE "folds" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"compaction_id" bigint NOT NULL,
	"strategy" text NOT NULL,
	"extension" text NOT NULL,
	"from_index" bigint NOT NULL,
	"to_index" bigint NOT NULL,
	"text" text NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "hook_traces" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"event" text NOT NULL,
	"subject" text DEFAULT '' NOT NULL,
	"about_invocation_id" bigint,
	"hook_invocation_id" bigint,
	"extension" text NOT NULL,
	"answer" text NOT NULL,
	"detail" text DEFAULT '' NOT NULL,
	"duration_ms" double precision NOT NULL,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "hosts" (
	"name" text PRIMARY KEY NOT NULL,
	"seen_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"clock_skew_ms" bigint NOT NULL,
	"version" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "installs" (
	"name" text PRIMARY KEY NOT NULL,
	"version" text NOT NULL,
	"description" text NOT NULL,
	"manifest_text" text NOT NULL,
	"manifest_hash" text NOT NULL,
	"artifact_path" text NOT NULL,
	"artifact_hash" text NOT NULL,
	"source_dir" text NOT NULL,
	"installed_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invocations" (
	"id" bigserial PRIMARY KEY NOT NULL,
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
	"hooks_bypassed" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "kv" (
	"extension" text NOT NULL,
	"key" text NOT NULL,
	"value" "bytea" NOT NULL,
	"encoding" text DEFAULT 'bytes' NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	CONSTRAINT "kv_extension_key_pk" PRIMARY KEY("extension","key")
);
--> statement-breakpoint
CREATE TABLE "preferences" (
	"scope" text NOT NULL,
	"extension" text NOT NULL,
	"enabled" boolean NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	CONSTRAINT "preferences_scope_extension_pk" PRIMARY KEY("scope","extension")
);
--> statement-breakpoint
CREATE TABLE "provider_preferences" (
	"session_id" text PRIMARY KEY NOT NULL,
	"rank" text NOT NULL,
	"exclude" text NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_kv" (
	"extension" text NOT NULL,
	"session_id" text NOT NULL,
	"key" text NOT NULL,
	"value" "bytea" NOT NULL,
	"encoding" text DEFAULT 'bytes' NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	CONSTRAINT "session_kv_extension_session_id_key_pk" PRIMARY KEY("extension","session_id","key")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace" text NOT NULL,
	"policy" text DEFAULT '{}' NOT NULL,
	"opened_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	"closed_at" bigint
);
--> statement-breakpoint
CREATE TABLE "source_files" (
	"sha256" text PRIMARY KEY NOT NULL,
	"content" "bytea" NOT NULL
);
--> statement-breakpoint
CREATE TABLE "strategy_preferences" (
	"session_id" text PRIMARY KEY NOT NULL,
	"strategy" text NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
--> statement-breakpoint
CREATE INDEX "approvals_extension" ON "approvals" USING btree ("extension");--> statement-breakpoint
CREATE INDEX "cap_audit_extension" ON "cap_audit" USING btree ("extension");--> statement-breakpoint
CREATE INDEX "cap_audit_at" ON "cap_audit" USING btree ("at");--> statement-breakpoint
CREATE INDEX "folds_session" ON "folds" USING btree ("session_id","compaction_id");--> statement-breakpoint
CREATE INDEX "hook_traces_session" ON "hook_traces" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "hook_traces_about" ON "hook_traces" USING btree ("about_invocation_id");