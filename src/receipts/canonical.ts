/**
 * Canonical JSON (RFC 8785, JSON Canonicalization Scheme) of receipt data (spec: Receipt,
 * "Signing and chaining rules" 1). Receipt signatures and hashes are computed over these bytes,
 * so two parties that hold the same JSON data always sign and hash the same bytes, whatever the
 * key order or whitespace of the JSON they received.
 *
 * Values are first checked to be plain JSON data, because `JSON.stringify` (like the
 * `canonicalize` package) silently drops or rewrites some non-JSON values: an `undefined`
 * property would vanish and a `Map` would become `{}`, so a signature would cover something
 * other than what the caller holds. The same walk puts object keys in canonical order, and
 * `JSON.stringify` writes the text (see `canonicalJson` for the one case left to `canonicalize`).
 */
import canonicalize from "canonicalize";

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
  const walk: Walk = { ancestors: [], path: [], indexKeys: false, shapes: [] };
  const ordered = inCanonicalOrder(value, walk);
  // JSON.stringify writes strings and numbers as RFC 8785 does and keeps key insertion order,
  // so once every object's keys are in canonical order it writes the canonical text, several
  // times faster than `canonicalize`. Except for array-index keys ("0", "17"): JavaScript
  // enumerates them first, in numeric order, so objects holding them take the slow path.
  const text = walk.indexKeys ? canonicalize(value) : JSON.stringify(ordered);
  if (text === undefined) throw new TypeError("canonical JSON: value has no JSON representation");
  return text;
}

/**
 * The canonical JSON of a plain object with and without some of its top-level keys, from one
 * walk: `full` is `canonicalJson(object)`, `without` is `canonicalJson` of a copy of `object`
 * lacking the `omit` keys. A receipt is hashed whole but signed without its signatures, so
 * verifying one needs both texts.
 *
 * @throws TypeError like `canonicalJson`, also when `object` is not a plain object.
 */
export function canonicalJsonWithout(
  object: object,
  omit: readonly string[],
): { full: string; without: string } {
  if (Array.isArray(object)) throw new TypeError("canonical JSON: expected an object, got an array");
  const walk: Walk = { ancestors: [], path: [], indexKeys: false, shapes: [] };
  const ordered = inCanonicalOrder(object, walk) as Record<string, unknown>;
  if (walk.indexKeys) {
    const rest: Record<string, unknown> = { ...object };
    for (const key of omit) delete rest[key];
    return { full: canonicalJson(object), without: canonicalJson(rest) };
  }
  // The members of JSON.stringify(ordered), written one by one so both texts share them.
  const all: string[] = [];
  const kept: string[] = [];
  for (const key of Object.keys(ordered)) {
    const member = `${JSON.stringify(key)}:${JSON.stringify(ordered[key])}`;
    all.push(member);
    if (!omit.includes(key)) kept.push(member);
  }
  return { full: `{${all.join(",")}}`, without: `{${kept.join(",")}}` };
}

/** The UTF-8 bytes of `canonicalJson(value)`. Throws like `canonicalJson`. */
export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), "utf8");
}

/** State of one `inCanonicalOrder` walk. */
interface Walk {
  /** The objects from the root to the current value, to detect cycles. */
  ancestors: object[];
  /** Keys and indices from the root to the current value, for error messages. */
  path: (string | number)[];
  /** Set when some object holds an array-index key. */
  indexKeys: boolean;
  /** Recently seen key lists and their canonical order (see `sortedKeys`). */
  shapes: { keys: string[]; sorted: string[] }[];
}

/**
 * Checks that `value` is plain JSON data (see `canonicalJson`) and returns it with every
 * object's keys in canonical order: `value` itself when they already are (as in parsed
 * canonical JSON), else a copy.
 */
function inCanonicalOrder(value: unknown, walk: Walk): unknown {
  switch (typeof value) {
    case "boolean":
      return value;
    case "string":
      if (!isWellFormed(value)) fail(walk, "lone surrogate in string");
      return value;
    case "number":
      if (!Number.isFinite(value)) fail(walk, `non-finite number ${value}`);
      return value;
    case "object":
      break;
    default:
      fail(walk, `${typeof value} is not JSON`);
  }
  if (value === null) return value;
  // Receipts nest a few levels deep, where a linear scan beats a Set.
  if (walk.ancestors.includes(value)) fail(walk, "circular reference");
  walk.ancestors.push(value);
  const result = Array.isArray(value)
    ? arrayInOrder(value, walk)
    : objectInOrder(value as Record<string, unknown>, walk);
  walk.ancestors.pop();
  return result;
}

function arrayInOrder(array: unknown[], walk: Walk): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    walk.path.push(i);
    if (!(i in array)) fail(walk, "sparse array");
    const item = array[i];
    const ordered = inCanonicalOrder(item, walk);
    walk.path.pop();
    if (ordered !== item && copy === undefined) copy = array.slice(0, i);
    copy?.push(ordered);
  }
  return copy ?? array;
}

function objectInOrder(object: Record<string, unknown>, walk: Walk): Record<string, unknown> {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = (object as { constructor?: { name?: string } }).constructor?.name ?? "object";
    fail(walk, `${name} instance is not plain JSON data`);
  }
  if (Object.getOwnPropertySymbols(object).length > 0) fail(walk, "symbol keys are not JSON");
  const keys = Object.keys(object);
  const order = sortedKeys(keys, walk);
  // Already in canonical order: keep the object unless a value below it had to be copied.
  let copy: Record<string, unknown> | undefined = order === keys ? undefined : {};
  for (let i = 0; i < order.length; i++) {
    const key = order[i]!;
    const item = object[key];
    walk.path.push(key);
    const ordered = inCanonicalOrder(item, walk);
    walk.path.pop();
    if (ordered !== item && copy === undefined) {
      copy = {};
      for (let j = 0; j < i; j++) put(copy, order[j]!, object[order[j]!]);
    }
    if (copy !== undefined) put(copy, key, ordered);
  }
  return copy ?? object;
}

function put(object: Record<string, unknown>, key: string, value: unknown): void {
  // Assigning "__proto__" would set the prototype; define it as an own property instead.
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else object[key] = value;
}

/**
 * `keys` itself when in canonical order, else a sorted copy. Checks every key (lone
 * surrogates, array indices) the first time a key list is seen; objects of one shape, such
 * as the events of a receipt, have equal key lists, so the last few are remembered.
 */
function sortedKeys(keys: string[], walk: Walk): string[] {
  for (const seen of walk.shapes) {
    if (sameKeys(seen.keys, keys)) return seen.sorted === seen.keys ? keys : seen.sorted;
  }
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (!isWellFormed(key)) fail(walk, "lone surrogate in key");
    if (isArrayIndex(key)) walk.indexKeys = true;
    // String comparison is by UTF-16 code units, the order RFC 8785 sorts keys in.
    if (i > 0 && keys[i - 1]! > key) sorted = false;
  }
  const order = sorted ? keys : [...keys].sort();
  if (walk.shapes.length >= 8) walk.shapes.shift();
  walk.shapes.push({ keys, sorted: order });
  return order;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** True for the keys JavaScript treats as array indices: canonical integers 0 .. 2^32 − 2. */
function isArrayIndex(key: string): boolean {
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57) return false;
  const n = Number(key);
  return n < 4294967295 && String(n) === key;
}

function fail(walk: Walk, problem: string): never {
  const path = walk.path.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("");
  throw new TypeError(`canonical JSON: ${problem} at $${path}`);
}

/** String.prototype.isWellFormed (ES2024, in Node 20): false when `text` holds a lone surrogate. */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}
