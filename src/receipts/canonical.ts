/// <reference path="./json-canon.d.ts" />
/**
 * Canonical JSON (RFC 8785, JSON Canonicalization Scheme) of receipt data (spec: Receipt,
 * "Signing and chaining rules" 1). Receipt signatures and hashes are computed over these bytes,
 * so two parties that hold the same JSON data always sign and hash the same bytes, whatever the
 * key order or whitespace of the JSON they received.
 *
 * Serialization is delegated to the `json-canon` package (the fastest of the RFC 8785 libraries
 * measured in bench/receipt, byte-identical to `canonicalize` on the RFC's vectors and on signed
 * receipts: ADR 0011). Before that, values are checked to be plain JSON data, because the library
 * (like `JSON.stringify`) silently drops or rewrites some non-JSON values: an `undefined` array
 * item would become `null`, a `Map` `{}` (and an object whose first member is `undefined` comes
 * out malformed: `{,"b":1}`), so a signature would cover something
 * other than what the caller holds.
 */
import canonicalize from "json-canon";

/**
 * Returns the RFC 8785 canonical JSON text of `value`: object keys sorted by UTF-16 code units,
 * no whitespace, numbers in ECMAScript shortest round-trip form (`1e+21`, `0.000001`, `1e-7`,
 * `-0` → `0`), strings with only the mandatory escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
 * `\t`, other controls as lowercase `\u00xx`; everything else, including non-ASCII, literal).
 *
 * Accepted values: null, booleans, finite numbers, strings without lone surrogates, arrays
 * (without holes) and plain objects (prototype `Object.prototype` or null) of these, without
 * cycles.
 *
 * @throws TypeError on anything else: `undefined` (also as an object property or array item),
 *   NaN or ±Infinity, bigint, symbols, functions, class instances such as `Date`, `Map` or
 *   `Buffer`, objects with symbol keys, sparse arrays, lone surrogates, and circular references.
 */
export function canonicalJson(value: unknown): string {
  assertJson(value, [], new Set());
  return canonicalText(value);
}

/** The library's canonical text of a value `assertJson` accepted. */
function canonicalText(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (error) {
    throw new TypeError(`canonical JSON: ${(error as Error).message}`);
  }
  if (text === undefined) throw new TypeError("canonical JSON: value has no JSON representation");
  return text;
}

/**
 * The canonical JSON of a plain object with and without some of its top-level keys: `full` is
 * `canonicalJson(object)`, `without` is `canonicalJson` of a copy lacking the `omit` keys. A
 * receipt is hashed whole but signed without its signatures, so verifying one needs both.
 * @throws TypeError like `canonicalJson`, also when `object` is not a plain object.
 */
export function canonicalJsonWithout(
  object: object,
  omit: readonly string[],
): { full: string; without: string } {
  if (Array.isArray(object)) throw new TypeError("canonical JSON: expected an object, got an array");
  const rest: Record<string, unknown> = { ...object };
  for (const key of omit) delete rest[key];
  // `rest` holds a subset of the values `object` holds: checked once.
  return { full: canonicalJson(object), without: canonicalText(rest) };
}

/** The UTF-8 bytes of `canonicalJson(value)`. Throws like `canonicalJson`. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), "utf8");
}

/**
 * Throws unless `value` is plain JSON data. `at` is the path of keys and indexes from the root,
 * turned into text (`$.a[0]`) only for the error: building it for every node cost more than
 * the check itself on a 1,000-event receipt.
 */
function assertJson(value: unknown, at: (string | number)[], ancestors: Set<object>): void {
  switch (typeof value) {
    case "boolean":
      return;
    case "string":
      if (hasLoneSurrogate(value))
        throw new TypeError(`canonical JSON: lone surrogate in string at ${pathOf(at)}`);
      return;
    case "number":
      if (!Number.isFinite(value))
        throw new TypeError(`canonical JSON: non-finite number ${value} at ${pathOf(at)}`);
      return;
    case "object":
      break;
    default:
      throw new TypeError(`canonical JSON: ${typeof value} is not JSON at ${pathOf(at)}`);
  }
  if (value === null) return;
  if (ancestors.has(value)) throw new TypeError(`canonical JSON: circular reference at ${pathOf(at)}`);
  ancestors.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) throw new TypeError(`canonical JSON: sparse array at ${pathOf([...at, i])}`);
      at.push(i);
      assertJson(value[i], at, ancestors);
      at.pop();
    }
  } else {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? "object";
      throw new TypeError(`canonical JSON: ${name} instance is not plain JSON data at ${pathOf(at)}`);
    }
    if (Object.getOwnPropertySymbols(value).length > 0) {
      throw new TypeError(`canonical JSON: symbol keys are not JSON at ${pathOf(at)}`);
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (hasLoneSurrogate(key))
        throw new TypeError(`canonical JSON: lone surrogate in key at ${pathOf(at)}`);
      at.push(key);
      assertJson(record[key], at, ancestors);
      at.pop();
    }
  }
  ancestors.delete(value);
}

/** `$.a.b[0]`: the path of keys and indexes `at`, as the errors name it. */
const pathOf = (at: readonly (string | number)[]): string =>
  `$${at.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("")}`;

/** `isWellFormed` is false exactly when a string holds a lone surrogate (faster than a `\p{Cs}` regex). */
function hasLoneSurrogate(text: string): boolean {
  return !text.isWellFormed();
}
