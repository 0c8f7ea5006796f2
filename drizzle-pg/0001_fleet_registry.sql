CREATE TABLE "artifact_blobs" (
	"extension" text NOT NULL,
	"artifact_hash" text NOT NULL,
	"content" "bytea" NOT NULL,
	"created_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL,
	CONSTRAINT "artifact_blobs_extension_artifact_hash_pk" PRIMARY KEY("extension","artifact_hash")
);
--> statement-breakpoint
CREATE TABLE "fleet_versions" (
	"name" text PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
