/**
 * Typed API errors with stable codes. Error body (documented in the README):
 * `{ "statusCode": 409, "code": "TG_ERR_CHAIN_COMPLETED", "error": "Conflict", "message": "...",
 *    "details": { ... } }`. 5xx responses never carry internal messages.
 */
import { ApiErrorCode } from "../contract/v1/errors.js";

/** An API error: an HTTP status, one of the contract's codes, a message, optional details. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new ApiError(400, ApiErrorCode.VALIDATION, message, details);
export const unauthorized = (message = "A valid API key or session is required") =>
  new ApiError(401, ApiErrorCode.UNAUTHENTICATED, message);
export const forbidden = (message = "Your role does not allow this") =>
  new ApiError(403, ApiErrorCode.FORBIDDEN, message);
export const notFound = (what: string) => new ApiError(404, ApiErrorCode.NOT_FOUND, `${what} not found`);
export const conflict = (code: ApiErrorCode, message: string, details?: Record<string, unknown>) =>
  new ApiError(409, code, message, details);

const reasonPhrases: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** The error body shape of every API error. */
export interface ErrorBody {
  statusCode: number;
  code: string;
  error: string;
  message: string;
  details?: Record<string, unknown>;
}

export const errorBody = (
  statusCode: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
): ErrorBody => ({
  statusCode,
  code,
  error: reasonPhrases[statusCode] ?? "Error",
  message,
  ...(details ? { details } : {}),
});
