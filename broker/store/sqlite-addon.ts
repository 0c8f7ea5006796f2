/**
 * Where better-sqlite3's native addon is. In the broker, where npm put it; in
 * a database jail (db-processes.ts), at the jail's own path, set once at the
 * start of the jail's script: the jail has no node_modules/ to find it in.
 */
let addon: string | undefined;

export function useSqliteAddon(path: string | undefined): void {
  addon = path;
}

/** The options every SQLite connection opened in a jail's script needs (none in the broker). */
export function sqliteAddonOption(): { nativeBinding?: string } {
  return addon !== undefined ? { nativeBinding: addon } : {};
}
