/**
 * Payload sanitization before an action leaves the agent or is stored (spec: "Limits" →
 * "Payload sanitization defaults", init() sensitive_field_patterns / sensitive_value_patterns /
 * max_payload_string_length). Pure; never mutates its input.
 *
 * Redaction applies at EVERY depth (policy facts read top-level keys only, but a secret nested
 * anywhere must still not be stored). A value is replaced by "[REDACTED]" when its key contains a
 * field pattern (case-insensitive substring: note that `ssn` also matches e.g. `classname`), or
 * when it is a string starting with a value prefix (case-sensitive `startsWith`). Custom patterns
 * are appended to the defaults, never replace them.
 */

/** Default field-name substrings (case-insensitive) whose values are redacted. */
export const DEFAULT_SENSITIVE_FIELD_PATTERNS: readonly string[] = [
  "api_key",
  "password",
  "secret",
  "_token",
  "credit_card",
  "ssn",
  "private_key",
];

/** Default value prefixes (case-sensitive startsWith) of strings that are redacted. */
export const DEFAULT_SENSITIVE_VALUE_PREFIXES: readonly string[] = [
  "sk_",
  "pk_",
  "ghp_",
  "hf_",
  "eyJ",
  "AKIA",
];

/** The prefix of Tollgate service API keys; redacted like the default value prefixes. */
export const DEFAULT_API_KEY_PREFIX = "tg_";

/** Default maximum string length (characters) before truncation. */
export const DEFAULT_MAX_STRING_LENGTH = 1000;

/** Nesting depth below the payload root beyond which objects and arrays are cut. */
export const MAX_PAYLOAD_DEPTH = 20;

/** Replacement of a redacted value. */
export const REDACTED = "[REDACTED]";
/** Appended to a truncated string. */
export const TRUNCATED_SUFFIX = "…[truncated]";
/** Replacement of an object or array nested deeper than {@link MAX_PAYLOAD_DEPTH}. */
export const TRUNCATED_DEPTH = "[TRUNCATED_DEPTH]";
/** Replacement of a reference back to an enclosing object (a cycle). */
export const CIRCULAR = "[CIRCULAR]";

/** Options of {@link sanitizePayload}; every list is appended to its default. */
export interface SanitizeOptions {
  /** Extra field-name substrings (case-insensitive). Empty strings are ignored. */
  fieldPatterns?: readonly string[];
  /** Extra value prefixes (case-sensitive). Empty strings are ignored. */
  valuePrefixes?: readonly string[];
  /** Maximum string length in characters; default 1000. Must be a positive integer. */
  maxStringLength?: number;
  /** The service API key prefix; default "tg_". */
  apiKeyPrefix?: string;
}

/** The sanitized payload and what was changed. */
export interface SanitizeResult {
  payload: Record<string, unknown>;
  /** Values replaced by "[REDACTED]". */
  redacted: number;
  /** Strings shortened, plus objects cut for depth or cycles. */
  truncated: number;
}

interface Walker {
  fieldPatterns: readonly string[];
  valuePrefixes: readonly string[];
  maxStringLength: number;
  redacted: number;
  truncated: number;
  ancestors: Set<object>;
}

/** Whether `key` contains one of `patterns` (lowercase), case-insensitively. */
export const isSensitiveKey = (
  key: string,
  patterns: readonly string[] = DEFAULT_SENSITIVE_FIELD_PATTERNS,
): boolean => {
  const lower = key.toLowerCase();
  return patterns.some((pattern) => lower.includes(pattern.toLowerCase()));
};

/** Whether `value` starts with one of `prefixes`. */
export const hasSensitivePrefix = (
  value: string,
  prefixes: readonly string[] = [...DEFAULT_SENSITIVE_VALUE_PREFIXES, DEFAULT_API_KEY_PREFIX],
): boolean => prefixes.some((prefix) => value.startsWith(prefix));

const sanitizeString = (value: string, w: Walker): string => {
  if (hasSensitivePrefix(value, w.valuePrefixes)) {
    w.redacted++;
    return REDACTED;
  }
  if (value.length > w.maxStringLength) {
    w.truncated++;
    // Never cut between the two halves of a surrogate pair: a lone surrogate cannot be stored.
    const lastCode = value.charCodeAt(w.maxStringLength - 1);
    const end = lastCode >= 0xd800 && lastCode <= 0xdbff ? w.maxStringLength - 1 : w.maxStringLength;
    return value.slice(0, end) + TRUNCATED_SUFFIX;
  }
  return value;
};

/** Sanitized value; undefined means "drop" (functions, symbols, undefined). */
const walk = (value: unknown, depth: number, w: Walker): unknown => {
  switch (typeof value) {
    case "string":
      return sanitizeString(value, w);
    case "number":
    case "boolean":
      return value;
    case "bigint":
      return value.toString();
    case "object":
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (w.ancestors.has(value)) {
    w.truncated++;
    return CIRCULAR;
  }
  if (depth > MAX_PAYLOAD_DEPTH) {
    w.truncated++;
    return TRUNCATED_DEPTH;
  }
  w.ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return Array.from(value, (item) => walk(item, depth + 1, w) ?? null);
    }
    return sanitizeObject(value as Record<string, unknown>, depth, w);
  } finally {
    w.ancestors.delete(value);
  }
};

/**
 * LLM token counts (input_tokens, prompt_tokens, ...) contain the default pattern `_token` but are
 * usage numbers, not secrets; a finite number under one of these keys is kept so that llm_call
 * cost estimation and the token-budget limit work. A string under such a key is still redacted.
 */
export const TOKEN_COUNT_KEYS: readonly string[] = [
  "input_tokens",
  "output_tokens",
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "max_tokens",
];
const isTokenCount = (key: string, value: unknown): boolean =>
  typeof value === "number" && Number.isFinite(value) && TOKEN_COUNT_KEYS.includes(key.toLowerCase());

const sanitizeObject = (
  record: Record<string, unknown>,
  depth: number,
  w: Walker,
): Record<string, unknown> => {
  const entries: [string, unknown][] = [];
  for (const [key, value] of Object.entries(record)) {
    if (isSensitiveKey(key, w.fieldPatterns) && !isTokenCount(key, value)) {
      w.redacted++;
      entries.push([key, REDACTED]);
      continue;
    }
    const sanitized = walk(value, depth + 1, w);
    if (sanitized !== undefined) entries.push([key, sanitized]);
  }
  // fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return Object.fromEntries(entries);
};

/**
 * Returns a sanitized deep copy of `payload`: sensitive keys and values redacted at every depth,
 * strings longer than maxStringLength cut to that length + "…[truncated]", objects nested more
 * than 20 levels below the root replaced by "[TRUNCATED_DEPTH]", cycles by "[CIRCULAR]", Dates
 * by ISO strings, bigints by decimal strings; functions, symbols and undefined are dropped
 * (null inside arrays). The value prefix check runs before truncation.
 *
 * @throws RangeError when maxStringLength is not a positive integer.
 */
export const sanitizePayload = (
  payload: Record<string, unknown>,
  opts: SanitizeOptions = {},
): SanitizeResult => {
  const maxStringLength = opts.maxStringLength ?? DEFAULT_MAX_STRING_LENGTH;
  if (!Number.isInteger(maxStringLength) || maxStringLength < 1) {
    throw new RangeError(`maxStringLength must be a positive integer, got ${maxStringLength}`);
  }
  const nonEmpty = (list: readonly string[] | undefined): string[] =>
    (list ?? []).filter((p) => p.length > 0);
  const apiKeyPrefix = opts.apiKeyPrefix ? opts.apiKeyPrefix : DEFAULT_API_KEY_PREFIX;
  const w: Walker = {
    fieldPatterns: [...DEFAULT_SENSITIVE_FIELD_PATTERNS, ...nonEmpty(opts.fieldPatterns)],
    valuePrefixes: [...DEFAULT_SENSITIVE_VALUE_PREFIXES, apiKeyPrefix, ...nonEmpty(opts.valuePrefixes)],
    maxStringLength,
    redacted: 0,
    truncated: 0,
    ancestors: new Set(),
  };
  const isRecord = typeof payload === "object" && payload !== null && !Array.isArray(payload);
  const sanitized = isRecord ? walk(payload, 0, w) : {};
  return { payload: sanitized as Record<string, unknown>, redacted: w.redacted, truncated: w.truncated };
};
