import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalBytes, canonicalJson } from "../../../src/receipts/canonical.js";

/** An IEEE 754 double from its 16 hex digits, as RFC 8785 Appendix B lists them. */
const double = (hex: string): number => Buffer.from(hex, "hex").readDoubleBE(0);

describe("canonicalJson (RFC 8785)", () => {
  it("serializes the sample of RFC 8785 section 3.2.2", () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        ' "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units (RFC 8785 section 3.2.3)", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis",' +
        '"€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it("serializes the structures of the RFC 8785 reference data: empty keys and objects, nesting", () => {
    const input = JSON.parse(
      '{"1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0}, "10": { }, "": "empty", "a": { }, "111": [ { } ], "A": { }}',
    );
    expect(canonicalJson(input)).toBe(
      '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}',
    );
  });

  it("neither escapes </script> or DEL nor normalizes Unicode (RFC 8785 reference data)", () => {
    expect(canonicalJson({ "</script>": "Browser Challenge", "\u0080": "Control\u007f" })).toBe(
      '{"</script>":"Browser Challenge","\u0080":"Control\u007f"}',
    );
    expect(canonicalJson({ "Unnormalized Unicode": "\u1e0d\u0307" })).toBe(
      '{"Unnormalized Unicode":"\u1e0d\u0307"}',
    );
  });

  it("serializes a toJSON member as data, not as a serialization hook", () => {
    expect(canonicalJson(JSON.parse('{"b":1,"toJSON":{"z":1,"y":2},"a":2}'))).toBe(
      '{"a":2,"b":1,"toJSON":{"y":2,"z":1}}',
    );
    expect(canonicalJson({ toJSON: "x", a: [{ toJSON: null }] })).toBe(
      '{"a":[{"toJSON":null}],"toJSON":"x"}',
    );
  });

  it("sorts nested objects and keeps array order", () => {
    expect(canonicalJson({ b: [3, { z: 1, a: 2 }, 1], a: { d: null, c: "x" } })).toBe(
      '{"a":{"c":"x","d":null},"b":[3,{"a":2,"z":1},1]}',
    );
  });

  it.each([
    ["0000000000000000", "0"],
    ["8000000000000000", "0"],
    ["0000000000000001", "5e-324"],
    ["8000000000000001", "-5e-324"],
    ["7fefffffffffffff", "1.7976931348623157e+308"],
    ["ffefffffffffffff", "-1.7976931348623157e+308"],
    ["4340000000000000", "9007199254740992"],
    ["c340000000000000", "-9007199254740992"],
    ["4430000000000000", "295147905179352830000"],
    ["44b52d02c7e14af5", "9.999999999999997e+22"],
    ["44b52d02c7e14af6", "1e+23"],
    ["44b52d02c7e14af7", "1.0000000000000001e+23"],
    ["444b1ae4d6e2ef4e", "999999999999999700000"],
    ["444b1ae4d6e2ef4f", "999999999999999900000"],
    ["444b1ae4d6e2ef50", "1e+21"],
    ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
    ["3eb0c6f7a0b5ed8d", "0.000001"],
    ["41b3de4355555553", "333333333.3333332"],
    ["41b3de4355555554", "333333333.33333325"],
    ["41b3de4355555555", "333333333.3333333"],
    ["41b3de4355555556", "333333333.3333334"],
    ["41b3de4355555557", "333333333.33333343"],
    ["becbf647612f3696", "-0.0000033333333333333333"],
    ["43143ff3c1cb0959", "1424953923781206.2"],
  ])("serializes the double 0x%s as %s (RFC 8785 appendix B)", (hex, expected) => {
    expect(canonicalJson(double(hex))).toBe(expected);
  });

  it.each([
    [1e21, "1e+21"],
    [1e20, "100000000000000000000"],
    [0.000001, "0.000001"],
    [1e-7, "1e-7"],
    [-0, "0"],
    [-1e-7, "-1e-7"],
    [-1e21, "-1e+21"],
    [4.5, "4.5"],
    [100, "100"],
  ])("serializes the number %d as %s", (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it.each([
    ["333333333.33333329", "333333333.3333333"],
    ["9007199254740993", "9007199254740992"],
    ["1E400", null],
    ["-0.0", "0"],
    ["1.0e-7", "1e-7"],
    ["100e19", "1e+21"],
  ])("serializes the JSON number %s, as received, as %s (null: not finite, rejected)", (text, expected) => {
    const value = JSON.parse(text);
    if (expected === null) expect(() => canonicalJson(value)).toThrow(TypeError);
    else expect(canonicalJson(value)).toBe(expected);
  });

  it.each([
    ["\u0000\u0001\u001f", '"\\u0000\\u0001\\u001f"'],
    ["\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'],
    ['"\\', '"\\"\\\\"'],
    ["/\u007f\u0080é€😀", '"/\u007f\u0080é€😀"'],
    ["\u2028\u2029", '"\u2028\u2029"'],
  ])("escapes only what RFC 8785 requires in %j", (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it("returns the UTF-8 bytes of the canonical text from canonicalBytes", () => {
    const bytes = canonicalBytes({ b: "€", a: 1 });
    expect(bytes.equals(Buffer.from('{"a":1,"b":"€"}', "utf8"))).toBe(true);
    expect(bytes.length).toBe(17);
  });

  const circular: Record<string, unknown> = { a: 1 };
  circular.self = circular;
  const sparse: number[] = [1, 2, 3];
  delete sparse[1];

  it.each([
    ["undefined", undefined],
    ["an undefined property", { a: undefined }],
    ["an undefined array item", [1, undefined]],
    ["NaN", { n: Number.NaN }],
    ["Infinity", [Number.POSITIVE_INFINITY]],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["a function", { f: () => 1 }],
    ["a bigint", { n: 1n }],
    ["a symbol", Symbol("s")],
    ["a Date", { at: new Date(0) }],
    ["a Map", new Map([["a", 1]])],
    ["a Buffer", Buffer.from("x")],
    ["a class instance", new (class Point {})()],
    ["a symbol key", { [Symbol("k")]: 1 }],
    ["a sparse array", sparse],
    ["a lone high surrogate", "\ud83d"],
    ["a lone low surrogate in a key", { "a\ude00": 1 }],
    ["a circular reference", circular],
  ])("throws a TypeError on %s", (_label, value) => {
    expect(() => canonicalJson(value)).toThrow(TypeError);
  });

  it("accepts shared (non-circular) references and null-prototype objects", () => {
    const shared = { x: 1 };
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { b: 2, a: shared });
    expect(canonicalJson({ p: shared, q: shared, r: bare })).toBe(
      '{"p":{"x":1},"q":{"x":1},"r":{"a":{"x":1},"b":2}}',
    );
  });

  it("is a fixed point of JSON parsing and independent of key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        expect(canonicalJson(reverseKeys(value))).toBe(text);
      }),
    );
  });
});

function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).reverse();
  const out: Record<string, unknown> = {};
  for (const [key, item] of entries)
    Object.defineProperty(out, key, {
      value: reverseKeys(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return out;
}
