import { CountedMap } from "../../broker/base/counted-map.js";

describe("CountedMap: a Map that counts its changes", () => {
  test("set, a delete that removed an entry and a clear of a non-empty map each count; the rest does not", () => {
    const map = new CountedMap<string, number>();
    expect(map.changes).toBe(0);
    map.set("a", 1).set("b", 2);
    expect(map.changes).toBe(2);
    map.set("a", 3); // a new value for a key is a change too
    expect(map.changes).toBe(3);
    expect(map.delete("nope")).toBe(false);
    expect(map.get("a")).toBe(3);
    expect(map.changes).toBe(3);
    expect(map.delete("a")).toBe(true);
    expect(map.changes).toBe(4);
    map.clear();
    expect(map.changes).toBe(5);
    map.clear();
    expect(map.changes).toBe(5);
    expect(map.size).toBe(0);
  });

  test("made with entries: they are in it, and counting starts after them", () => {
    const map = new CountedMap([["a", 1]]);
    expect(map.get("a")).toBe(1);
    expect(map.changes).toBe(0);
  });
});
