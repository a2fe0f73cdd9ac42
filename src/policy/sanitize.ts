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

/**
 * Every prefix of a secret the service issues: API keys (tg_), dashboard sessions (tgs_), public
 * verification tokens (tgp_) and the service admin token (tga_). All are redacted by default.
 */
export const SERVICE_SECRET_PREFIXES: readonly string[] = [DEFAULT_API_KEY_PREFIX, "tgs_", "tgp_", "tga_"];

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
  prefixes: readonly string[] = [...DEFAULT_SENSITIVE_VALUE_PREFIXES, ...SERVICE_SECRET_PREFIXES],
): boolean => prefixes.some((prefix) => value.startsWith(prefix));

const sanitizeString = (value: string, w: Walker): string => {
  if (hasSensitivePrefix(value, w.valuePrefixes)) {
    w.redacted++;
    return REDACTED;
  }
  if (value.length > w.maxStringLength) {
    w.truncated++;
    return cutText(value, w.maxStringLength) + TRUNCATED_SUFFIX;
  }
  return value;
};

/**
 * The first `max` UTF-16 units of `value`, one fewer when the cut would split a surrogate pair:
 * a lone surrogate can be neither stored nor signed (the service refuses it).
 */
export const cutText = (value: string, max: number): string => {
  if (value.length <= max) return value;
  const last = value.charCodeAt(max - 1);
  return value.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
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
    valuePrefixes: [
      ...DEFAULT_SENSITIVE_VALUE_PREFIXES,
      apiKeyPrefix,
      ...SERVICE_SECRET_PREFIXES,
      ...nonEmpty(opts.valuePrefixes),
    ],
    maxStringLength,
    redacted: 0,
    truncated: 0,
    ancestors: new Set(),
  };
  const isRecord = typeof payload === "object" && payload !== null && !Array.isArray(payload);
  const sanitized = isRecord ? walk(payload, 0, w) : {};
  return { payload: sanitized as Record<string, unknown>, redacted: w.redacted, truncated: w.truncated };
};

/** A `name=value`, `name: value` or `"name": "value"` pair inside free text. */
const TEXT_PAIR = /(["']?)([A-Za-z0-9_.-]+)\1(\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s"',;&]+)/g;
/** A word of free text: what stands between white space, quotes, brackets and separators. */
const TEXT_WORD = /[^\s"'`()<>[\]{},;:=&]+/g;

/**
 * Redacts secrets inside free text — chain names, approval notes, failure messages — with the
 * payload rules applied to its parts (README "Secrets outside the payload"):
 * - a `name=value` or `name: value` pair (quotes allowed) whose name contains a field pattern has
 *   its value replaced by "[REDACTED]" (a number under an LLM token-count name is kept);
 * - any word that starts with a value prefix (the spec's defaults, every prefix the service
 *   issues, custom ones) is replaced by "[REDACTED]".
 * Pure. Never lengthens a text by more than the markers it inserts.
 */
export function redactText(
  text: string,
  opts: Pick<SanitizeOptions, "fieldPatterns" | "valuePrefixes"> = {},
): string {
  const nonEmpty = (list: readonly string[] | undefined): string[] =>
    (list ?? []).filter((p) => p.length > 0);
  const fieldPatterns = [...DEFAULT_SENSITIVE_FIELD_PATTERNS, ...nonEmpty(opts.fieldPatterns)];
  const valuePrefixes = [
    ...DEFAULT_SENSITIVE_VALUE_PREFIXES,
    ...SERVICE_SECRET_PREFIXES,
    ...nonEmpty(opts.valuePrefixes),
  ];
  return text
    .replace(TEXT_PAIR, (pair, q: string, name: string, sep: string, value: string) => {
      if (!isSensitiveKey(name, fieldPatterns) || isTokenCount(name, Number(value))) return pair;
      const quote = value[0] === '"' || value[0] === "'" ? value[0] : "";
      return `${q}${name}${q}${sep}${quote}${REDACTED}${quote}`;
    })
    .replace(TEXT_WORD, (word) =>
      word !== REDACTED && hasSensitivePrefix(word, valuePrefixes) ? REDACTED : word,
    );
}
