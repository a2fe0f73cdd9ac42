/**
 * ServiceClient: the low-level HTTP client of the governance service (spec: "Endpoints",
 * "Verification helpers (sdk.client)"). One method per route; requests and responses are the
 * wire JSON (snake_case), validated with zod. Chain builds on it; the sidecar uses it directly.
 *
 * Errors of every method: BackendUnavailableError (unreachable, per-request timeout, HTTP
 * 502/503/504), ServiceApiError (any other non-2xx, 500 included; malformed response),
 * ServiceTransportError (another transport failure), the AbortSignal's reason on abort.
 * Authentication: `Authorization: Bearer <api key>`.
 */
import { z } from "zod";
import {
  type ApprovalStatusResponse,
  ApprovalStatusResponseSchema,
  type ApprovalView,
  ApprovalViewSchema,
} from "../contract/v1/approvals.js";
import {
  type ChainDetail,
  ChainDetailSchema,
  type ChainView,
  ChainViewSchema,
  type CompleteChainRequest,
  type CompleteResponse,
  CompleteResponseSchema,
  type CreateChainRequest,
  OutcomeBatchResponseSchema,
  type OutcomeReport,
  type OutcomeReportResult,
  OutcomeResponseSchema,
  type RecordActionRequest,
  type RecordActionResponse,
  RecordActionResponseSchema,
} from "../contract/v1/chains.js";
import {
  type ApprovalVerification,
  ApprovalVerificationSchema,
  type ArtifactType,
  ArtifactTypeSchema,
  type IssuedToken,
  IssuedTokenSchema,
  type LegacyReceiptVerification,
  LegacyReceiptVerificationSchema,
  type PublicVerificationResult,
  PublicVerificationResultSchema,
  type ReceiptVerification,
  ReceiptVerificationSchema,
  type RevokedToken,
  RevokedTokenSchema,
  type TokenList,
  TokenListSchema,
  type TokenStatus,
} from "../contract/v1/verification.js";
import { type EventOutcome, EventOutcomeSchema, MAX_OUTCOMES_PER_BATCH } from "../contract/v1/wire.js";
import type { SignedReceipt } from "../receipts/schema.js";
import type { ChainConfig, Credential } from "./config.js";
import { ServiceApiError, VerificationError } from "./exceptions.js";
import { type HttpSettings, requestJson } from "./http.js";

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request; the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Longest hold of one approval-status request (the service's maximum `wait`), in ms. */
export const MAX_APPROVAL_WAIT_MS = 5000;

/** Options of approvalStatus. */
export interface ApprovalStatusOptions extends CallOptions {
  /**
   * Long-poll (`?wait=`, beyond the spec): the service holds the request up to this many ms
   * (0..5000) while the approval is pending; the per-request timeout grows by as much.
   */
  waitMs?: number;
}

/** Options of the ServiceClient constructor. */
export interface ServiceClientOptions {
  /** Service API key (`tg_...`), or a function returning the current bearer secret; a secret. */
  apiKey: Credential;
  /** Base URL; default http://localhost:8000. */
  backendUrl?: string;
  /** Per-request timeout in ms; default 5000. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The signed receipt JSON (spec: "Receipt"); shape in src/receipts/schema.ts. */
export type Receipt = SignedReceipt;
const ReceiptSchema = z.looseObject({
  receipt_number: z.string(),
  chain_id: z.string(),
}) as unknown as z.ZodType<Receipt>;

/** What verifyReceiptV2 or verifyApprovalV2 returns (spec: overall_status and integrity.status, and more). */
export type VerificationResult = ReceiptVerification | ApprovalVerification;

/** Filters of listPublicVerificationTokens. */
export interface TokenListFilter {
  status?: TokenStatus;
  artifactType?: ArtifactType;
  artifactId?: string;
  /** 1..500; default 100 (server side). */
  limit?: number;
}

/** `outcome` validated; @throws TypeError naming `field` and the offending key. */
function validOutcome(outcome: EventOutcome, field: string): EventOutcome {
  const parsed = EventOutcomeSchema.safeParse(outcome);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TypeError(`${field}.${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}

const id = (value: string, field: string): string => {
  if (typeof value !== "string" || value.trim() === "" || value.length > 200) {
    throw new TypeError(`${field}: must be a non-empty string`);
  }
  return encodeURIComponent(value);
};

/** The low-level HTTP client of the governance service. */
export class ServiceClient {
  readonly #http: HttpSettings;

  /** @throws TypeError when apiKey is empty or backendUrl is not an http(s) URL. */
  constructor(opts: ServiceClientOptions) {
    if (typeof opts.apiKey !== "function" && (typeof opts.apiKey !== "string" || opts.apiKey.trim() === ""))
      throw new TypeError("apiKey: must be a non-empty string");
    const baseUrl = (opts.backendUrl ?? "http://localhost:8000").replace(/\/+$/, "");
    if (!/^https?:\/\/[^/]/i.test(baseUrl)) throw new TypeError("backendUrl: must be an http(s) URL");
    this.#http = {
      baseUrl,
      apiKey: opts.apiKey,
      timeoutMs: opts.timeoutMs ?? 5000,
      fetch: opts.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    };
  }

  /** A client for a ChainConfig (its URL, key, timeout and fetch). */
  static fromConfig(config: ChainConfig): ServiceClient {
    return new ServiceClient({
      apiKey: config.credential,
      backendUrl: config.backendUrl,
      timeoutMs: config.backendTimeoutMs,
      fetch: config.internals.fetch,
    });
  }

  /** The service base URL. */
  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  /** POST /v1/chains → 201 chain (chain_id assigned by the backend). */
  async createChain(body: CreateChainRequest, opts: CallOptions = {}): Promise<ChainView> {
    return requestJson(this.#http, "POST", "/v1/chains", {
      route: "POST /v1/chains",
      body,
      signal: opts.signal,
      schema: ChainViewSchema,
    });
  }

  /** GET /v1/chains/{chain_id} → the chain and its stored (sanitized) events. */
  async getChain(chainId: string, opts: CallOptions = {}): Promise<ChainDetail> {
    return requestJson(this.#http, "GET", `/v1/chains/${id(chainId, "chainId")}`, {
      route: "GET /v1/chains/{chain_id}",
      signal: opts.signal,
      schema: ChainDetailSchema,
    });
  }

  /**
   * POST /v1/chains/{chain_id}/actions → the decision and where it was recorded. Never retried
   * (recording is not idempotent). 409 codes TG_ERR_CHAIN_COMPLETED, TG_ERR_APPROVAL_PENDING and
   * TG_ERR_CHAIN_PAUSED arrive as ServiceApiError.
   */
  async recordAction(
    chainId: string,
    action: RecordActionRequest,
    opts: CallOptions = {},
  ): Promise<RecordActionResponse> {
    return requestJson(this.#http, "POST", `/v1/chains/${id(chainId, "chainId")}/actions`, {
      route: "POST /v1/chains/{chain_id}/actions",
      body: action,
      signal: opts.signal,
      schema: RecordActionResponseSchema,
    });
  }

  /**
   * GET /v1/chains/{chain_id}/approval-status[?approval_id=&wait=] → chain status and the
   * approval; with `waitMs` the service answers once the approval is no longer pending or the
   * wait elapsed.
   * @throws TypeError when waitMs is not within 0..5000.
   */
  async approvalStatus(
    chainId: string,
    approvalId?: string | null,
    opts: ApprovalStatusOptions = {},
  ): Promise<ApprovalStatusResponse> {
    const waitMs = opts.waitMs ?? 0;
    if (!(waitMs >= 0 && waitMs <= MAX_APPROVAL_WAIT_MS))
      throw new TypeError(`waitMs: must be within 0..${MAX_APPROVAL_WAIT_MS}`);
    const params = [
      ...(approvalId ? [`approval_id=${id(approvalId, "approvalId")}`] : []),
      ...(waitMs > 0 ? [`wait=${waitMs / 1000}`] : []),
    ];
    const qs = params.length ? `?${params.join("&")}` : "";
    const http = waitMs > 0 ? { ...this.#http, timeoutMs: this.#http.timeoutMs + waitMs } : this.#http;
    return requestJson(http, "GET", `/v1/chains/${id(chainId, "chainId")}/approval-status${qs}`, {
      route: "GET /v1/chains/{chain_id}/approval-status",
      signal: opts.signal,
      schema: ApprovalStatusResponseSchema,
    });
  }

  /**
   * POST /v1/approvals/{approval_id}/withdraw (beyond the spec): the caller gives up its own
   * pending approval; it becomes `cancelled` and can no longer be decided, and the chain takes
   * further actions. `reason` (≤ 500 characters) is recorded.
   * @throws ServiceApiError 409 TG_ERR_APPROVAL_RESOLVED when it was already resolved; 404.
   */
  async withdrawApproval(approvalId: string, reason?: string, opts: CallOptions = {}): Promise<ApprovalView> {
    return requestJson(this.#http, "POST", `/v1/approvals/${id(approvalId, "approvalId")}/withdraw`, {
      route: "POST /v1/approvals/{approval_id}/withdraw",
      body: reason ? { reason } : {},
      signal: opts.signal,
      schema: ApprovalViewSchema,
    });
  }

  /** POST /v1/chains/{chain_id}/complete → seals the chain and issues the receipt. */
  async completeChain(
    chainId: string,
    body: CompleteChainRequest = {},
    opts: CallOptions = {},
  ): Promise<CompleteResponse> {
    return requestJson(this.#http, "POST", `/v1/chains/${id(chainId, "chainId")}/complete`, {
      route: "POST /v1/chains/{chain_id}/complete",
      body,
      signal: opts.signal,
      schema: CompleteResponseSchema,
    });
  }

  /** GET /v1/chains/{chain_id}/receipt → the signed receipt, or null before completion (404). */
  async getReceipt(chainId: string, opts: CallOptions = {}): Promise<Receipt | null> {
    try {
      return await requestJson(this.#http, "GET", `/v1/chains/${id(chainId, "chainId")}/receipt`, {
        route: "GET /v1/chains/{chain_id}/receipt",
        signal: opts.signal,
        schema: ReceiptSchema,
      });
    } catch (err) {
      if (err instanceof ServiceApiError && err.statusCode === 404) return null;
      throw err;
    }
  }

  /**
   * POST /v1/chains/{chain_id}/events/{event_id}/outcome: reports what happened when an allowed
   * action was carried out (once per event).
   * @throws TypeError when `outcome` is invalid (names the field).
   */
  async reportOutcome(
    chainId: string,
    eventId: string,
    outcome: EventOutcome,
    opts: CallOptions = {},
  ): Promise<{ chain_id: string; event_id: string; outcome: EventOutcome }> {
    return requestJson(
      this.#http,
      "POST",
      `/v1/chains/${id(chainId, "chainId")}/events/${id(eventId, "eventId")}/outcome`,
      {
        route: "POST /v1/chains/{chain_id}/events/{event_id}/outcome",
        body: validOutcome(outcome, "outcome"),
        signal: opts.signal,
        schema: OutcomeResponseSchema,
      },
    );
  }

  /**
   * POST /v1/outcomes: reports many outcomes in one request (1..MAX_OUTCOMES_PER_BATCH), each
   * bound as reportOutcome would bind it. An outcome the service refuses does not fail the
   * others: its result says why (`recorded: false`, `error.code`).
   * @throws TypeError when the batch is empty, too large, or an outcome is invalid (names it).
   */
  async reportOutcomes(
    outcomes: readonly OutcomeReport[],
    opts: CallOptions = {},
  ): Promise<OutcomeReportResult[]> {
    if (outcomes.length === 0 || outcomes.length > MAX_OUTCOMES_PER_BATCH) {
      throw new TypeError(`outcomes: must hold 1..${MAX_OUTCOMES_PER_BATCH} outcomes`);
    }
    const body = {
      outcomes: outcomes.map((o, i) => ({
        chain_id: o.chain_id,
        event_id: o.event_id,
        outcome: validOutcome(o.outcome, `outcomes.${i}.outcome`),
      })),
    };
    const res = await requestJson(this.#http, "POST", "/v1/outcomes", {
      route: "POST /v1/outcomes",
      body,
      signal: opts.signal,
      schema: OutcomeBatchResponseSchema,
    });
    return res.results;
  }

  /** GET /v1/verification/v2/receipts/{receipt_id} (member or admin): server-attested integrity. */
  async verifyReceiptV2(receiptId: string, opts: CallOptions = {}): Promise<ReceiptVerification> {
    return requestJson(this.#http, "GET", `/v1/verification/v2/receipts/${id(receiptId, "receiptId")}`, {
      route: "GET /v1/verification/v2/receipts/{receipt_id}",
      signal: opts.signal,
      schema: ReceiptVerificationSchema,
    });
  }

  /** GET /v1/verification/v2/approvals/{approval_id} (member or admin; role-dependent result). */
  async verifyApprovalV2(approvalId: string, opts: CallOptions = {}): Promise<ApprovalVerification> {
    return requestJson(this.#http, "GET", `/v1/verification/v2/approvals/${id(approvalId, "approvalId")}`, {
      route: "GET /v1/verification/v2/approvals/{approval_id}",
      signal: opts.signal,
      schema: ApprovalVerificationSchema,
    });
  }

  /** GET /v1/public-verification-tokens (admin): token records, newest first, never plaintext or hashes. */
  async listPublicVerificationTokens(
    filter: TokenListFilter = {},
    opts: CallOptions = {},
  ): Promise<TokenList> {
    const query = new URLSearchParams();
    if (filter.status) query.set("status", filter.status);
    if (filter.artifactType) query.set("artifact_type", filter.artifactType);
    if (filter.artifactId) query.set("artifact_id", filter.artifactId);
    if (filter.limit !== undefined) query.set("limit", String(filter.limit));
    const qs = query.size ? `?${query}` : "";
    return requestJson(this.#http, "GET", `/v1/public-verification-tokens${qs}`, {
      route: "GET /v1/public-verification-tokens",
      signal: opts.signal,
      schema: TokenListSchema,
    });
  }

  /**
   * POST /v1/public-verification-tokens (admin) → {token_id, token, public_path, ...}. The
   * plaintext token is returned once; store or share it, it cannot be recovered.
   */
  async issuePublicVerificationToken(
    artifact: { artifactType: ArtifactType; artifactId: string },
    opts: CallOptions = {},
  ): Promise<IssuedToken> {
    if (!ArtifactTypeSchema.safeParse(artifact.artifactType).success) {
      throw new TypeError(`artifactType: must be ${ArtifactTypeSchema.options.join(" or ")}`);
    }
    id(artifact.artifactId, "artifactId");
    return requestJson(this.#http, "POST", "/v1/public-verification-tokens", {
      route: "POST /v1/public-verification-tokens",
      body: { artifact_type: artifact.artifactType, artifact_id: artifact.artifactId },
      signal: opts.signal,
      schema: IssuedTokenSchema,
    });
  }

  /** POST /v1/public-verification-tokens/{token_id}/revoke (admin); the public link stops working. */
  async revokePublicVerificationToken(tokenId: string, opts: CallOptions = {}): Promise<RevokedToken> {
    return requestJson(
      this.#http,
      "POST",
      `/v1/public-verification-tokens/${id(tokenId, "tokenId")}/revoke`,
      {
        route: "POST /v1/public-verification-tokens/{token_id}/revoke",
        body: {},
        signal: opts.signal,
        schema: RevokedTokenSchema,
      },
    );
  }

  /**
   * GET /public/v2/verify/{token}: the minimized public verification result. Sent without the
   * API key (the token alone authorizes).
   * @throws VerificationError (sanitized: no status, no reason, no token) for any non-2xx answer;
   *   BackendUnavailableError when the service is unreachable.
   */
  async verifyPublicToken(token: string, opts: CallOptions = {}): Promise<PublicVerificationResult> {
    if (typeof token !== "string" || token.trim() === "" || token.length > 512) throw new VerificationError();
    try {
      return await requestJson(this.#http, "GET", `/public/v2/verify/${encodeURIComponent(token)}`, {
        route: "GET /public/v2/verify/{token}",
        auth: false,
        secretPath: true,
        signal: opts.signal,
        schema: PublicVerificationResultSchema,
      });
    } catch (err) {
      if (err instanceof ServiceApiError) throw new VerificationError();
      throw err;
    }
  }

  /**
   * Legacy GET /v1/receipts/{receipt_id}/verify (compatibility only). Emits a DeprecationWarning
   * (code TG_DEP_VERIFY_RECEIPT); use {@link verifyReceiptV2}.
   */
  async verifyReceipt(receiptId: string, opts: CallOptions = {}): Promise<LegacyReceiptVerification> {
    process.emitWarning("verifyReceipt() is deprecated (legacy route); use verifyReceiptV2()", {
      type: "DeprecationWarning",
      code: "TG_DEP_VERIFY_RECEIPT",
    });
    return requestJson(this.#http, "GET", `/v1/receipts/${id(receiptId, "receiptId")}/verify`, {
      route: "GET /v1/receipts/{receipt_id}/verify",
      signal: opts.signal,
      schema: LegacyReceiptVerificationSchema,
    });
  }
}
