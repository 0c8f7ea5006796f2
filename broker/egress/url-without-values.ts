/**
 * A URL as the broker writes it down or shows it to others: scheme, host,
 * port, path and the query's names, each value `…`; no credentials, no
 * fragment. Secrets travel in query values (and a server can put one back
 * into a redirect's), so what the audit, the ledger's traces and other
 * extensions' hooks hold of a URL never has them.
 */
export function urlWithoutValues(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // Not a URL: what precedes any query, fragment or credentials, bounded.
    return text.split(/[?#@]/)[0]!.slice(0, 2048);
  }
  const keys = [...url.searchParams.keys()];
  const query = keys.length > 0 ? `?${keys.map((k) => `${encodeURIComponent(k)}=…`).join("&")}` : "";
  return `${url.protocol}//${url.host}${url.pathname}${query}`;
}
