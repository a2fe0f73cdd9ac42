/**
 * Input limits of the HTTP API (README "Input limits"). One place: the service enforces them at
 * its boundary (src/service/boundary.ts), clients may check them before sending.
 */

/** Largest request body the service reads, in bytes (1 MiB); larger bodies answer 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Deepest nesting of objects and arrays in any request body, query or path value: the root
 * object is level 1, so `{"a":{"b":[1]}}` is 3 levels deep. Deeper input answers 400. The SDK
 * cuts payloads at 20 levels below the root (src/policy/sanitize.ts MAX_PAYLOAD_DEPTH), well
 * inside this limit.
 */
export const MAX_JSON_DEPTH = 32;
