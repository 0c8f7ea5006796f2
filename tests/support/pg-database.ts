/**
 * Test support: a fresh database on the fleet project's shared PostgreSQL
 * server (TETHER_TEST_POSTGRES_URL), one per test file, so files run in
 * parallel without seeing each other's rows.
 */
import pg from "pg";

export async function freshDatabase(name: string): Promise<string> {
  const serverUrl = process.env.TETHER_TEST_POSTGRES_URL ?? "";
  if (serverUrl === "")
    throw new Error(
      "TETHER_TEST_POSTGRES_URL is not set: run the fleet project (make test, or jest --selectProjects fleet)",
    );
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}
