/**
 * canonicalJson orders keys itself and lets JSON.stringify write the text (for speed); these
 * properties pin its output to the `canonicalize` package (the RFC 8785 reference it replaced)
 * byte for byte, including the keys JavaScript enumerates out of insertion order.
 */
import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, canonicalJsonWithout } from "../../../src/receipts/canonical.js";

/** Keys that stress ordering: array indices, "__proto__", non-ASCII, and surrogate pairs. */
const key = fc.oneof(
  fc.string(),
  fc.constantFrom("0", "1", "9", "10", "01", "-1", "1.5", "4294967294", "4294967295", "__proto__", ""),
  fc.constantFrom("é", "€", "\ud83d\ude00", "\ufb33", "\r", "A", "a", "Z_"),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 1 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 6 }),
  ),
})).value;

describe("canonicalJson matches canonicalize", () => {
  it("on arbitrary JSON values, whatever the key order", () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(canonicalJson(value)).toBe(canonicalize(value));
        const parsed = JSON.parse(canonicalJson(value));
        expect(canonicalJson(parsed)).toBe(canonicalize(parsed));
      }),
      { numRuns: 500 },
    );
  });

  it("on objects whose array-index keys JavaScript enumerates first", () => {
    const value = JSON.parse('{"b":1,"10":2,"9":3,"!":4,"a":{"2":5,"10":6}}');
    expect(canonicalJson(value)).toBe('{"!":4,"10":2,"9":3,"a":{"10":6,"2":5},"b":1}');
    expect(canonicalJson(value)).toBe(canonicalize(value));
  });

  it('keeps an own "__proto__" key', () => {
    const value = JSON.parse('{"z":1,"__proto__":{"b":1,"a":2}}');
    expect(canonicalJson(value)).toBe('{"__proto__":{"a":2,"b":1},"z":1}');
  });

  it("does not change the value it serializes", () => {
    const value = { b: [{ d: 1, c: 2 }], a: null };
    const before = JSON.stringify(value);
    canonicalJson(value);
    expect(JSON.stringify(value)).toBe(before);
  });

  it("names the path of a non-JSON value", () => {
    expect(() => canonicalJson({ a: [1, { b: Number.NaN }] })).toThrow("non-finite number NaN at $.a[1].b");
  });
});

describe("canonicalJsonWithout", () => {
  it("gives canonicalJson of the object and of the object without the omitted keys", () => {
    fc.assert(
      fc.property(
        fc.dictionary(key, json, { maxKeys: 6 }),
        fc.subarray(["a", "b", "10", "__proto__"]),
        (object, omit) => {
          const rest: Record<string, unknown> = { ...object };
          for (const k of omit) delete rest[k];
          expect(canonicalJsonWithout(object, omit)).toEqual({
            full: canonicalJson(object),
            without: canonicalJson(rest),
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("throws like canonicalJson", () => {
    expect(() => canonicalJsonWithout({ a: undefined }, [])).toThrow(TypeError);
    expect(() => canonicalJsonWithout([], [])).toThrow(TypeError);
  });
});
