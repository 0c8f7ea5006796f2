/** `tether doctor --store <url>`: the shared store's check (broker/store/pg/store-check.ts) as a doctor line. */
import { hostname } from "node:os";
import { UsageError } from "./command.js";
import { isPgUrl } from "../store/pg/open.js";
import { checkPgStore } from "../store/pg/store-check.js";
import { packageVersion } from "../base/version.js";
import type { Check } from "./doctor.js";
import { trustedKeys, type TrustedKey } from "../fleet-trust/operator-keys.js";
import { OperatorPolicySource } from "../caps/policy.js";

export async function storeCheck(url: string, host: string = hostname(), home?: string): Promise<Check> {
  if (!isPgUrl(url))
    throw new UsageError("--store takes a PostgreSQL URL: postgres://user:password@host:5432/database (docs/fleet.md)");
  let keys: TrustedKey[] = [];
  try {
    keys = home === undefined ? [] : trustedKeys(home);
  } catch (err) {
    return { name: "store (fleet)", ok: false, detail: (err as Error).message };
  }
  const policy = home === undefined ? null : new OperatorPolicySource(home).current();
  const bound = policy === null || policy instanceof Error ? undefined : policy.maxStalenessMs;
  const r = await checkPgStore(url, host, packageVersion(), keys, bound);
  return { name: "store (fleet)", ok: r.ok, detail: r.detail };
}
