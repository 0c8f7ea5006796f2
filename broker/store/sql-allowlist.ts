/**
 * The statements an extension's database accepts: the allowlist itself is in
 * the wire (jail-runtime/wire/sql-allowlist.ts), so the author SDK's test
 * kit (`FakeDb`) refuses exactly what the broker refuses.
 */
export {
  checkStatement,
  scanSql,
  splitStatements,
  stripComments,
  type SqlCheck,
} from "../../jail-runtime/wire/sql-allowlist.js";
