/**
 * Whether an extension's secrets are set, as the review and `tether status`
 * show it: names only, never a value; a secret store that cannot be read is
 * said, not thrown.
 */
import { FileSecrets, SecretStoreError } from "../secrets/store.js";

/** Whether each of `extension`'s secrets is set (or why the store cannot be read). */
export function secretStatus(home: string, extension: string): (name: string) => boolean | string {
  try {
    const set = new FileSecrets(home).names(extension);
    return (name) => set.includes(name);
  } catch (err) {
    if (!(err instanceof SecretStoreError)) throw err;
    return () => err.message;
  }
}
