import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./broker/store/schema.ts",
  out: "./drizzle",
});
