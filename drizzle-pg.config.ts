import { defineConfig } from "drizzle-kit";

// The fleet's shared store (docs/fleet.md): the same tables in PostgreSQL's dialect.
export default defineConfig({
  dialect: "postgresql",
  schema: "./broker/store/pg/schema.ts",
  out: "./drizzle-pg",
});
