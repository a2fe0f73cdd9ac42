/**
 * What no string or JSON value may carry into the service, checked without recursion so that
 * hostile nesting cannot overflow the stack (README "Input limits"):
 * - U+0000 (NUL) in any string or object key: PostgreSQL's text and jsonb cannot store it;
 * - unpaired UTF-16 surrogates (U+D800–U+DFFF alone): not Unicode scalar values, so they can be
 *   neither stored nor canonicalized (RFC 8785) for signing;
 * - numbers that are not finite (a JSON literal such as 1e400 parses to Infinity);
 * - nesting deeper than a limit (MAX_JSON_DEPTH).
 * Pure; no I/O.
 */
import { MAX_JSON_DEPTH } from "./limits.js";

/** Where an unsafe value sits and why it is refused. */
export interface UnsafeValue {
  /** RFC 6901 JSON Pointer from the checked root, e.g. "/payload/path" ("" for the root). */
  pointer: string;
  /** Human-readable reason, e.g. "must not contain U+0000 (NUL)". */
  reason: string;
}

/** Why a string is refused, or null when it is safe. */
export function unsafeStringReason(s: string): string | null {
  if (s.includes("\u0000")) return "must not contain U+0000 (NUL)";
  if (!s.isWellFormed()) return "must not contain an unpaired UTF-16 surrogate";
  return null;
}

/** RFC 6901: "~" → "~0", "/" → "~1". */
export const escapePointerToken = (token: string): string => token.replace(/~/g, "~0").replace(/\//g, "~1");

/** Dotted form of a JSON Pointer for messages ("/payload/a~1b/0" → "payload.a/b.0"). */
export const pointerToPath = (pointer: string): string =>
  pointer
    .split("/")
    .slice(1)
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");

/**
 * The first unsafe string, key, number or nesting in `value` (depth-first, document order), or
 * null when everything is safe. Iterative: any depth is checked without recursion.
 * @param maxDepth deepest allowed nesting of objects/arrays (root container = 1); default
 *   MAX_JSON_DEPTH.
 */
export function findUnsafeValue(value: unknown, maxDepth: number = MAX_JSON_DEPTH): UnsafeValue | null {
  const stack: { value: unknown; pointer: string; depth: number }[] = [{ value, pointer: "", depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (typeof v === "string") {
      const reason = unsafeStringReason(v);
      if (reason) return { pointer: item.pointer, reason };
      continue;
    }
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return { pointer: item.pointer, reason: "must be a finite number" };
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    const depth = item.depth + 1;
    if (depth > maxDepth) {
      return { pointer: item.pointer, reason: `must not be nested more than ${maxDepth} levels deep` };
    }
    const children: { value: unknown; pointer: string; depth: number }[] = [];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++)
        children.push({ value: v[i], pointer: `${item.pointer}/${i}`, depth });
    } else {
      for (const [key, child] of Object.entries(v)) {
        const pointer = `${item.pointer}/${escapePointerToken(key)}`;
        const reason = unsafeStringReason(key);
        if (reason) return { pointer, reason: `key ${reason}` };
        children.push({ value: child, pointer, depth });
      }
    }
    // Pushed in reverse so that the first child is checked first (document order).
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return null;
}
