/**
 * Facts the policy engine derives from one recorded action (spec: "Limits" → single action
 * amount threshold, other approval triggers). Pure: no I/O, no clock.
 *
 * Payload key conventions (spec: "nested keys do not count"): facts are read from TOP-LEVEL
 * payload keys only, with exactly one exception: the `usage` object of an llm_call event, whose
 * `input_tokens` / `prompt_tokens` / `output_tokens` / `completion_tokens` are read because that
 * is where every LLM SDK reports token usage. Keys are read as own properties only, so keys such
 * as `constructor` or `__proto__` never resolve to inherited values.
 *
 * | fact | payload keys (first usable wins) |
 * | --- | --- |
 * | amount_usd | `amount_usd`, `amount`, `value`: finite number or numeric string (`"1200.50"`, `"$1,200"`) |
 * | domains | `domain`, `destination_domain`, `url`, `endpoint`, `webhook_url`, `to`, `email`, `recipient`, `recipients`, `cc`, `bcc`: a string or an array of strings; URLs give their host, email addresses the part after `@` |
 * | record_count | `record_count`, `records_count`, `count` (number or numeric string), else the length of array `records`, `ids` or `items` |
 * | is_deletion | action_name matches `(^|[_-.])(delete|remove|purge|drop|destroy|erase)`, or `operation` / `op` is delete, remove or purge |
 * | is_irreversible | `irreversible === true`, `tags` contains "irreversible", or action_name is in irreversible_actions |
 * | tokens (llm_call) | `input_tokens` / `prompt_tokens` / `usage.*`, `output_tokens` / `completion_tokens` / `usage.*`, `model` |
 * | pii | every top-level string value, and strings inside top-level arrays, except the address keys above |
 */
import type { Action, ActionCategory, PolicyConfig } from "./schema.js";

/** Kinds of personal data the PII detector recognizes. The values themselves are never reported. */
export const PiiKind = {
  email: "email",
  ssn: "ssn",
  credit_card: "credit_card",
  phone: "phone",
} as const;
export type PiiKind = (typeof PiiKind)[keyof typeof PiiKind];

/** Everything the engine knows about an action, derived from its fields and the policy config. */
export interface ActionFacts {
  /** Amount in USD from amount_usd / amount / value; null when none is numeric. May be negative. */
  amount_usd: number | null;
  /** amount_usd !== null or action_type === "financial". */
  is_financial: boolean;
  /**
   * The destination domain (lowercase host): the first EXTERNAL domain of `domains` when there is
   * one, else the first domain; null when the action names no destination. This is also the
   * destination domain of a time-boxed exception's scope.
   */
  destination_domain: string | null;
  /** Every destination domain named by the address keys, lowercase, deduplicated, in key order. */
  domains: string[];
  /** The domains of `domains` that are not internal (not matched by internal_domains). */
  external_domains: string[];
  /** At least one destination domain is not internal. */
  is_external: boolean;
  /** The action has external domains and every one of them matches external_domains_allowlist. */
  allowlisted: boolean;
  /** Number of records the action touches; null when unknown. */
  record_count: number | null;
  is_deletion: boolean;
  is_irreversible: boolean;
  /** LLM model name (llm_call only); null when absent. */
  model: string | null;
  /** Input (prompt) tokens of an llm_call; 0 otherwise. */
  input_tokens: number;
  /** Output (completion) tokens of an llm_call; 0 otherwise. */
  output_tokens: number;
  /** input_tokens + output_tokens; counts toward runaway_limits.max_tokens. */
  tokens: number;
  /** USD cost of an llm_call from llm_pricing[model] or default_llm_price; null for other types. */
  estimated_cost_usd: number | null;
  pii_detected: boolean;
  /** Which kinds of PII were seen, in PiiKind order; never the values. */
  pii_kinds: PiiKind[];
  /** The action's category (fail modes, metrics); see {@link categorize}. */
  category: ActionCategory;
}

/** Keys whose values name where an action sends data (spec: external communication). */
export const DESTINATION_KEYS = [
  "domain",
  "destination_domain",
  "url",
  "endpoint",
  "webhook_url",
  "to",
  "email",
  "recipient",
  "recipients",
  "cc",
  "bcc",
] as const;

/** Keys that carry a monetary amount in USD, in priority order (spec: "Limits"). */
export const AMOUNT_KEYS = ["amount_usd", "amount", "value"] as const;
/** Keys that carry an explicit record count, in priority order. */
export const RECORD_COUNT_KEYS = ["record_count", "records_count", "count"] as const;
/** Keys whose array length is the record count when no explicit count is given. */
export const RECORD_ARRAY_KEYS = ["records", "ids", "items"] as const;

const DELETION_NAME = /(^|[_\-.])(delete|remove|purge|drop|destroy|erase)/i;
const DELETION_OPERATIONS = new Set(["delete", "remove", "purge"]);
const HOSTNAME = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;
const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;
const THOUSANDS = /^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;

/** The own property `key` of `record`, or undefined (never an inherited value). */
export const ownValue = (record: Record<string, unknown>, key: string): unknown =>
  Object.hasOwn(record, key) ? record[key] : undefined;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A finite number from a number or a numeric string (`"12"`, `"1.5e3"`, `"$1,200.50"`);
 * null for anything else (NaN, Infinity, booleans, other strings).
 */
export const toFiniteNumber = (value: unknown): number | null => {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string") return null;
  let text = value.trim();
  if (text.startsWith("$")) text = text.slice(1).trim();
  if (THOUSANDS.test(text)) text = text.replaceAll(",", "");
  if (!NUMERIC.test(text)) return null;
  const parsed = Number(text);
  return Number.isFinite(parsed) ? parsed : null;
};

/** A non-negative count, capped at Number.MAX_SAFE_INTEGER so that sums stay finite. */
const toCount = (value: unknown): number | null => {
  const n = toFiniteNumber(value);
  return n !== null && n >= 0 ? Math.min(n, Number.MAX_SAFE_INTEGER) : null;
};

/** The first key of `keys` whose own value `parse` accepts. */
const firstOf = <T>(
  record: Record<string, unknown>,
  keys: readonly string[],
  parse: (value: unknown) => T | null,
): T | null => {
  for (const key of keys) {
    const parsed = parse(ownValue(record, key));
    if (parsed !== null) return parsed;
  }
  return null;
};

/**
 * The lowercase host named by a URL, an email address or a bare host (`"Evil.COM:443/x"`);
 * null when the text names no valid hostname.
 */
export const domainFromText = (text: string): string | null => {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  let host: string;
  if (trimmed.includes("://")) {
    try {
      host = new URL(trimmed).hostname;
    } catch {
      return null;
    }
  } else {
    const at = trimmed.lastIndexOf("@");
    const rest = at >= 0 ? trimmed.slice(at + 1) : trimmed;
    host = rest.split(/[\s/:?#>),;]/, 1)[0] ?? "";
  }
  host = host.toLowerCase().replace(/\.$/, "");
  return host.length > 0 && host.length <= 253 && HOSTNAME.test(host) ? host : null;
};

/** Strings of a value that is a string or an array (only its direct string elements). */
const stringsOf = (value: unknown): string[] => {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return [];
};

/**
 * Whether `domain` matches a pattern list entry: `*.example.com` matches any subdomain of
 * example.com (not example.com itself); `example.com` matches example.com and every subdomain.
 * Case-insensitive.
 */
export const domainMatches = (domain: string, pattern: string): boolean => {
  const d = domain.toLowerCase();
  const p = pattern.toLowerCase().replace(/\.$/, "");
  if (p.startsWith("*.")) return d.endsWith(p.slice(1));
  return d === p || d.endsWith(`.${p}`);
};

/** Whether `domain` matches any entry of `patterns` (see {@link domainMatches}). */
export const domainInList = (domain: string, patterns: readonly string[]): boolean =>
  patterns.some((pattern) => domainMatches(domain, pattern));

/** Luhn checksum of a digit string. */
export const luhnValid = (digits: string): boolean => {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
};

const EMAIL = /[A-Za-z0-9._%+-]@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/;
const SSN = /(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)/;
const CARD_CANDIDATE = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d])/g;
const PHONE = /\+(?:[ .\-()]{0,2}\d){10,15}(?!\d)/;

const hasCardNumber = (text: string): boolean => {
  for (const match of text.matchAll(CARD_CANDIDATE)) {
    const digits = match[0].replace(/[ -]/g, "");
    if (digits.length >= 13 && digits.length <= 19 && luhnValid(digits)) return true;
  }
  return false;
};

/** The PII detectors, in report order: each a predicate over one string. */
const PII_DETECTORS: readonly (readonly [PiiKind, (text: string) => boolean])[] = [
  [PiiKind.email, (text) => text.includes("@") && EMAIL.test(text)],
  [PiiKind.ssn, (text) => SSN.test(text)],
  [PiiKind.credit_card, hasCardNumber],
  [PiiKind.phone, (text) => text.includes("+") && PHONE.test(text)],
];

/**
 * Kinds of PII found in `texts`: email addresses, US SSNs (ddd-dd-dddd), card numbers (13–19
 * digits, optionally grouped by spaces or dashes, passing Luhn), phone numbers (`+` then 10–15
 * digits, optionally separated by spaces, dots, dashes or parentheses).
 */
export const detectPii = (texts: readonly string[]): PiiKind[] =>
  PII_DETECTORS.filter(([, detect]) => texts.some(detect)).map(([kind]) => kind);

const destinationKeySet: ReadonlySet<string> = new Set(DESTINATION_KEYS);

/** Top-level strings of the payload scanned for PII: everything except the address keys. */
const piiTexts = (payload: Record<string, unknown>): string[] =>
  Object.keys(payload)
    .filter((key) => !destinationKeySet.has(key))
    .flatMap((key) => stringsOf(payload[key]));

interface TokenUsage {
  input: number;
  output: number;
  model: string | null;
}

const readTokens = (payload: Record<string, unknown>): TokenUsage => {
  const usageValue = ownValue(payload, "usage");
  const usage = isRecord(usageValue) ? usageValue : {};
  const input =
    firstOf(payload, ["input_tokens", "prompt_tokens"], toCount) ??
    firstOf(usage, ["input_tokens", "prompt_tokens"], toCount) ??
    0;
  const output =
    firstOf(payload, ["output_tokens", "completion_tokens"], toCount) ??
    firstOf(usage, ["output_tokens", "completion_tokens"], toCount) ??
    0;
  const modelValue = ownValue(payload, "model");
  return { input, output, model: typeof modelValue === "string" && modelValue !== "" ? modelValue : null };
};

/**
 * USD cost of an LLM call: input/1000 × input_per_1k_usd + output/1000 × output_per_1k_usd, with
 * the price of `model` from llm_pricing, or default_llm_price for an unknown or missing model.
 */
export const estimateLlmCost = (
  config: Pick<PolicyConfig, "llm_pricing" | "default_llm_price">,
  model: string | null,
  inputTokens: number,
  outputTokens: number,
): number => {
  const price =
    model !== null && Object.hasOwn(config.llm_pricing, model)
      ? (config.llm_pricing[model] ?? config.default_llm_price)
      : config.default_llm_price;
  return (inputTokens / 1000) * price.input_per_1k_usd + (outputTokens / 1000) * price.output_per_1k_usd;
};

const readRecordCount = (payload: Record<string, unknown>): number | null => {
  const explicit = firstOf(payload, RECORD_COUNT_KEYS, toCount);
  if (explicit !== null) return explicit;
  return firstOf(payload, RECORD_ARRAY_KEYS, (value) => (Array.isArray(value) ? value.length : null));
};

const readIsDeletion = (actionName: string, payload: Record<string, unknown>): boolean => {
  if (DELETION_NAME.test(actionName)) return true;
  return ["operation", "op"].some((key) => {
    const value = ownValue(payload, key);
    return typeof value === "string" && DELETION_OPERATIONS.has(value.trim().toLowerCase());
  });
};

const readIsIrreversible = (
  actionName: string,
  payload: Record<string, unknown>,
  irreversibleActions: readonly string[],
): boolean => {
  if (ownValue(payload, "irreversible") === true) return true;
  const tags = ownValue(payload, "tags");
  if (
    Array.isArray(tags) &&
    tags.some((tag) => typeof tag === "string" && tag.toLowerCase() === "irreversible")
  )
    return true;
  const name = actionName.toLowerCase();
  return irreversibleActions.some((entry) => entry.toLowerCase() === name);
};

/** The destination domains of the payload, first occurrence first, each once (a loop: it runs per action). */
const readDomains = (payload: Record<string, unknown>): string[] => {
  const found = new Set<string>();
  const add = (text: unknown) => {
    if (typeof text !== "string") return;
    const domain = domainFromText(text);
    if (domain !== null) found.add(domain);
  };
  for (const key of DESTINATION_KEYS) {
    if (!Object.hasOwn(payload, key)) continue;
    const value = payload[key];
    if (Array.isArray(value)) for (const item of value) add(item);
    else add(value);
  }
  return [...found];
};

/** The facts {@link categorize} needs. */
export type CategoryFacts = Pick<
  ActionFacts,
  "is_financial" | "is_deletion" | "record_count" | "is_irreversible" | "is_external"
> & { action_type: string };

/**
 * The action's category, first that applies: financial, bulk_deletion (deletion touching at least
 * bulk_deletion_threshold records), irreversible, external_communication, bulk_operation (at least
 * bulk_operation_threshold records), llm_call (action_type llm_call), default.
 */
export const categorize = (
  facts: CategoryFacts,
  config: Pick<PolicyConfig, "bulk_deletion_threshold" | "bulk_operation_threshold">,
): ActionCategory => {
  const count = facts.record_count;
  if (facts.is_financial) return "financial";
  if (facts.is_deletion && count !== null && count >= config.bulk_deletion_threshold) return "bulk_deletion";
  if (facts.is_irreversible) return "irreversible";
  if (facts.is_external) return "external_communication";
  if (count !== null && count >= config.bulk_operation_threshold) return "bulk_operation";
  if (facts.action_type === "llm_call") return "llm_call";
  return "default";
};

/**
 * Derives the {@link ActionFacts} of `action` under `config` (see the key table at the top of
 * this file). Never throws: a payload that is not a plain object is treated as empty, and values
 * of unexpected types are ignored.
 */
export const extractFacts = (action: Action, config: PolicyConfig): ActionFacts => {
  const payload: Record<string, unknown> = isRecord(action.payload) ? action.payload : {};
  const amount_usd = firstOf(payload, AMOUNT_KEYS, toFiniteNumber);
  const is_financial = amount_usd !== null || action.action_type === "financial";

  const domains = readDomains(payload);
  const external_domains = domains.filter((domain) => !domainInList(domain, config.internal_domains));
  const is_external = external_domains.length > 0;
  const allowlisted =
    is_external &&
    external_domains.every((domain) => domainInList(domain, config.external_domains_allowlist));
  const destination_domain = external_domains[0] ?? domains[0] ?? null;

  const record_count = readRecordCount(payload);
  const is_deletion = readIsDeletion(action.action_name, payload);
  const is_irreversible = readIsIrreversible(action.action_name, payload, config.irreversible_actions);

  const isLlmCall = action.action_type === "llm_call";
  const usage = isLlmCall ? readTokens(payload) : { input: 0, output: 0, model: null };
  const estimated_cost_usd = isLlmCall
    ? estimateLlmCost(config, usage.model, usage.input, usage.output)
    : null;

  const pii_kinds = detectPii(piiTexts(payload));
  const category = categorize(
    {
      is_financial,
      is_deletion,
      record_count,
      is_irreversible,
      is_external,
      action_type: action.action_type,
    },
    config,
  );
  return {
    amount_usd,
    is_financial,
    destination_domain,
    domains,
    external_domains,
    is_external,
    allowlisted,
    record_count,
    is_deletion,
    is_irreversible,
    model: usage.model,
    input_tokens: usage.input,
    output_tokens: usage.output,
    tokens: usage.input + usage.output,
    estimated_cost_usd,
    pii_detected: pii_kinds.length > 0,
    pii_kinds,
    category,
  };
};
