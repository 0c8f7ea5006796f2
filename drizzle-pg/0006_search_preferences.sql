CREATE TABLE "search_preferences" (
	"session_id" text PRIMARY KEY NOT NULL,
	"rank" text NOT NULL,
	"exclude" text NOT NULL,
	"updated_at" bigint DEFAULT ((extract(epoch from clock_timestamp()) * 1000)::bigint) NOT NULL
);
