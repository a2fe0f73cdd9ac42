/**
 * The service's input boundary, checked for every route before its schema runs (README "Input
 * limits"; issue: fail closed on every input):
 * - `requirePrincipal` (onRequest): every /v1 route needs credentials, so an unauthenticated
 *   request answers 401 whatever its body — validation never describes a schema to a stranger.
 * - `rejectUnsafeInput` (preValidation): path parameters, the query string and the parsed body
 *   (JSON or form) must hold no NUL, no unpaired surrogate, no non-finite number and no nesting
 *   beyond MAX_JSON_DEPTH; the 400 names the field (dotted path and RFC 6901 JSON Pointer).
 * What passes here can be stored by PostgreSQL, canonicalized for signing and walked by the
 * policy engine, so no such input can end in a 500 — or in a client's fail mode.
 */

import type { FastifyRequest } from "fastify";
import { ApiErrorCode } from "../contract/v1/errors.js";
import { findUnsafeValue, pointerToPath } from "../contract/v1/json-safety.js";
import { ApiError, unauthorized } from "./errors.js";

/** Where a checked value came from, as named in the 400 (`params`, `query`, `body`). */
const LOCATIONS = ["params", "query", "body"] as const;

/**
 * onRequest hook (after the principal is resolved): a /v1 request without credentials is
 * refused before its body is read.
 * @throws ApiError 401 TG_ERR_UNAUTHENTICATED
 */
export async function requirePrincipal(req: FastifyRequest): Promise<void> {
  // The matched route's template, not the raw URL: percent-encoding cannot slip past it.
  if (req.principal === null && req.routeOptions.url?.startsWith("/v1/")) throw unauthorized();
}

/**
 * preValidation hook: refuses unsafe strings, numbers and nesting anywhere in the request.
 * @throws ApiError 400 TG_ERR_VALIDATION with details.issues[0] = {path, pointer, location, message},
 *   or the route's own `config.unsafeInputError()` when it declares one
 */
export async function rejectUnsafeInput(req: FastifyRequest): Promise<void> {
  for (const location of LOCATIONS) {
    const unsafe = findUnsafeValue(req[location]);
    if (!unsafe) continue;
    const path = [location, pointerToPath(unsafe.pointer)].filter(Boolean).join(".");
    const uniform = req.routeOptions.config.unsafeInputError;
    if (uniform) throw uniform();
    const issue = { path, pointer: unsafe.pointer, location, message: unsafe.reason };
    throw new ApiError(400, ApiErrorCode.VALIDATION, `${path}: ${unsafe.reason}`, { issues: [issue] });
  }
}
