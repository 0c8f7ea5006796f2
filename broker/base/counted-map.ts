/**
 * A Map that counts its changes: whoever derives something from its entries
 * keeps the count it derived at and works it out again only once the count
 * moved — whichever of the map's holders changed it.
 */
export class CountedMap<K, V> extends Map<K, V> {
  #changes = 0;

  /** Grows with every `set`, `delete` that removed an entry, and `clear` of a non-empty map. */
  get changes(): number {
    return this.#changes;
  }

  override set(key: K, value: V): this {
    super.set(key, value);
    // Map's constructor calls set before this class's fields exist; nothing is derived from a map yet.
    if (#changes in this) this.#changes += 1;
    return this;
  }

  override delete(key: K): boolean {
    const removed = super.delete(key);
    if (removed) this.#changes += 1;
    return removed;
  }

  override clear(): void {
    if (this.size > 0) this.#changes += 1;
    super.clear();
  }
}
