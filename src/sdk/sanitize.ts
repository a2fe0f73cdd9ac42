/**
 * Payload sanitization before anything leaves the process (spec: "Limits" → payload
 * sanitization defaults; init sensitive_field_patterns, sensitive_value_patterns,
 * max_payload_string_length). Uses the pure policy helper, so the client and the service
 * redact the same way: default field-name substrings api_key, password, secret, _token,
 * credit_card, ssn, private_key (case-insensitive, at every depth); default value prefixes sk_,
 * pk_, ghp_, hf_, eyJ, AKIA and the service API key prefix tg_ (case-sensitive startsWith);
 * custom patterns appended; longer strings truncated.
 */
import { sanitizePayload } from "../policy/sanitize.js";
import type { ChainConfig } from "./config.js";

/** Sanitizes `payload` with `config`'s patterns and length limit; returns a new object. */
export function sanitizeForConfig(
  payload: Record<string, unknown> | null | undefined,
  config: Pick<ChainConfig, "sensitiveFieldPatterns" | "sensitiveValuePatterns" | "maxPayloadStringLength">,
): Record<string, unknown> {
  return sanitizePayload(payload ?? {}, {
    fieldPatterns: config.sensitiveFieldPatterns ?? [],
    valuePrefixes: config.sensitiveValuePatterns ?? [],
    maxStringLength: config.maxPayloadStringLength,
  }).payload;
}
