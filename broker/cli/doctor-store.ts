/** `tether doctor --store <url>`: the shared store's check (broker/store/pg/store-check.ts) as a doctor line. */
import { hostname } from "node:os";
import { UsageError } from "./command.js";
import { isPgUrl } from "../store/pg/open.js";
import { checkPgStore } from "../store/pg/store-check.js";
import { packageVersion } from "../base/version.js";
import type { Check } from "./doctor.js";

export async function storeCheck(url: string, host: string = hostname()): Promise<Check> {
  if (!isPgUrl(url)) throw new UsageError("--store takes a PostgreSQL URL: postgres://user:password@host:5432/database (docs/fleet.md)");
  const r = await checkPgStore(url, host, packageVersion());
  return { name: "store (fleet)", ok: r.ok, detail: r.detail };
}
