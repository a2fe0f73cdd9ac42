/**
 * Client of the governance service's admin API (src/service/orgs/admin-routes.ts), the operator's
 * only way to the service (the folder is named "governance", not "service", so it does not read as
 * a Kubernetes Service). Authenticated with the service admin token (`Authorization: Bearer
 * <token>`, read from a mounted Secret file and re-read every few seconds so a rotated Secret takes
 * effect without a restart). Requests go over
 * node:http(s) keep-alive connections: the global fetch cost the operator several times more CPU
 * per call, which a burst of reconciles takes from the API server on a small node. Responses are
 * validated with zod; errors carry the HTTP status and the service's error code, never the token.
 */

import { readFile } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { z } from "zod";
import type {
  ApproverTeamSpecSchema,
  OrganizationSpecSchema,
  PolicySpecSchema,
} from "../../src/contract/v1/admin.js";
import {
  type ReplayRequest,
  type ReplayResponse,
  ReplayResponseSchema,
} from "../../src/contract/v1/replay.js";
import { traceCarrier } from "../../src/telemetry/tracing.js";

/** Body of PUT /v1/admin/organizations/{slug} (the contract's OrganizationSpecSchema input). */
export type OrganizationBody = z.input<typeof OrganizationSpecSchema>;
/** Body of PUT /v1/admin/organizations/{slug}/policies/{name} (config is a PolicyConfigPatch). */
export type PolicyBody = z.input<typeof PolicySpecSchema>;
/** Body of PUT /v1/admin/organizations/{slug}/approver-teams/{name}. */
export type ApproverTeamBody = z.input<typeof ApproverTeamSpecSchema>;

/** A failed admin API call. `status` is 0 for network errors and timeouts. */
export class AdminApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "AdminApiError";
  }
}

/**
 * Reads the bearer token from `file`, at most once per `maxAgeMs` (default 5 000; kubelet itself
 * refreshes mounted Secrets only every minute or so, and reading the file on every call was 6 %
 * of the operator's CPU in a burst). Throws an error naming the file (never its content) when
 * unreadable; a failed read is not cached.
 */
export function tokenFromFile(file: string, maxAgeMs = 5_000): () => Promise<string> {
  let cached: { token: Promise<string>; at: number } | undefined;
  const read = async () => {
    try {
      const token = (await readFile(file, "utf8")).trim();
      if (!token) throw new Error("file is empty");
      return token;
    } catch (err) {
      cached = undefined;
      throw new AdminApiError(
        0,
        "TOKEN_UNREADABLE",
        `cannot read the service admin token from ${file}: ${(err as Error).message}`,
      );
    }
  };
  return () => {
    const now = Date.now();
    if (!cached || now - cached.at >= maxAgeMs) cached = { token: read(), at: now };
    return cached.token;
  };
}

/** Options of {@link AdminApiClient}. */
export interface AdminApiClientOptions {
  /** Base URL of the service, e.g. http://tollgate.tollgate-system.svc:8000. */
  baseUrl: string;
  /** Returns the service admin token. */
  token: () => Promise<string>;
  /** Per-request timeout in ms (default 10 000). */
  timeoutMs?: number;
}

const Versioned = z.looseObject({ version: z.string() });
const Deleted = z.looseObject({ deleted: z.boolean() });
const MintedKey = z.looseObject({ key_id: z.string().min(1), api_key: z.string().min(1) });
const KeyList = z.looseObject({
  api_keys: z.array(
    z.looseObject({ key_id: z.string(), name: z.string(), revoked_at: z.string().nullable() }),
  ),
});
const ErrorBody = z.looseObject({ code: z.string().optional(), message: z.string().optional() });

/** An API key as listed by the service (the secret itself is only returned at creation). */
export type ApiKeyInfo = z.infer<typeof KeyList>["api_keys"][number];

const seg = encodeURIComponent;

/** The admin API calls the operator makes. Every method is idempotent except createApiKey. */
export class AdminApiClient {
  private readonly base: URL;
  private readonly basePath: string;
  private readonly timeoutMs: number;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;

  constructor(private readonly opts: AdminApiClientOptions) {
    this.base = new URL(opts.baseUrl);
    this.basePath = this.base.pathname.replace(/\/+$/, "");
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.transport = this.base.protocol === "https:" ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: 32 });
  }

  /** Closes idle keep-alive connections (the operator calls it when it stops). */
  close(): void {
    this.agent.destroy();
  }

  /** One HTTP exchange; rejects with AdminApiError(0) on network errors and timeouts. */
  private send(
    method: string,
    path: string,
    token: string,
    body: string | undefined,
  ): Promise<{ status: number; statusText: string; text: string }> {
    return new Promise((resolve, reject) => {
      const fail = (what: string) =>
        reject(new AdminApiError(0, "UNREACHABLE", `${method} ${path}: ${what}`));
      const req = this.transport.request(
        {
          protocol: this.base.protocol,
          hostname: this.base.hostname,
          port: this.base.port,
          path: `${this.basePath}${path}`,
          method,
          agent: this.agent,
          headers: {
            // The reconcile's trace continues in the service (W3C traceparent; none while tracing is off).
            ...traceCarrier(),
            authorization: `Bearer ${token}`,
            ...(body !== undefined && {
              "content-type": "application/json",
              "content-length": Buffer.byteLength(body),
            }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            clearTimeout(timer);
            resolve({
              status: res.statusCode ?? 0,
              statusText: res.statusMessage ?? "",
              text: Buffer.concat(chunks).toString("utf8"),
            });
          });
          res.on("error", (err) => {
            clearTimeout(timer);
            fail(err.message);
          });
        },
      );
      const timer = setTimeout(() => {
        req.destroy();
        fail(`timed out after ${this.timeoutMs} ms`);
      }, this.timeoutMs);
      req.on("error", (err) => {
        clearTimeout(timer);
        fail(err.message);
      });
      req.end(body);
    });
  }

  private async request<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    const token = await this.opts.token();
    const res = await this.send(method, path, token, body === undefined ? undefined : JSON.stringify(body));
    const text = res.text;
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = {};
    }
    if (res.status < 200 || res.status > 299) {
      const e = ErrorBody.safeParse(json);
      const code = (e.success && e.data.code) || `HTTP_${res.status}`;
      const message = (e.success && e.data.message) || res.statusText;
      throw new AdminApiError(res.status, code, `${method} ${path}: ${res.status} ${code}: ${message}`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new AdminApiError(
        502,
        "BAD_RESPONSE",
        `${method} ${path}: unexpected response: ${parsed.error.issues[0]?.message}`,
      );
    }
    return parsed.data;
  }

  /** PUT /v1/admin/organizations/{slug}; answers the organization's config version. */
  putOrganization(slug: string, body: OrganizationBody) {
    return this.request("PUT", `/v1/admin/organizations/${seg(slug)}`, Versioned, body);
  }

  /** DELETE /v1/admin/organizations/{slug} (cascades to policies, teams and API keys). */
  deleteOrganization(slug: string) {
    return this.request("DELETE", `/v1/admin/organizations/${seg(slug)}`, Deleted);
  }

  /** PUT /v1/admin/organizations/{slug}/policies/{name}. */
  putPolicy(slug: string, name: string, body: PolicyBody) {
    return this.request("PUT", `/v1/admin/organizations/${seg(slug)}/policies/${seg(name)}`, Versioned, body);
  }

  /**
   * POST /v1/admin/organizations/{slug}/policies/replay: replays a candidate over the
   * organization's recorded events (read only; src/contract/v1/replay.ts).
   */
  replayPolicy(slug: string, body: ReplayRequest): Promise<ReplayResponse> {
    return this.request(
      "POST",
      `/v1/admin/organizations/${seg(slug)}/policies/replay`,
      ReplayResponseSchema,
      body,
    );
  }

  /** DELETE /v1/admin/organizations/{slug}/policies/{name}; a missing organization counts as deleted. */
  deletePolicy(slug: string, name: string) {
    return this.ignoreMissing(
      this.request("DELETE", `/v1/admin/organizations/${seg(slug)}/policies/${seg(name)}`, Deleted),
    );
  }

  /** PUT /v1/admin/organizations/{slug}/approver-teams/{name}. */
  putApproverTeam(slug: string, name: string, body: ApproverTeamBody) {
    return this.request(
      "PUT",
      `/v1/admin/organizations/${seg(slug)}/approver-teams/${seg(name)}`,
      Versioned,
      body,
    );
  }

  /** DELETE /v1/admin/organizations/{slug}/approver-teams/{name}; a missing organization counts as deleted. */
  deleteApproverTeam(slug: string, name: string) {
    return this.ignoreMissing(
      this.request("DELETE", `/v1/admin/organizations/${seg(slug)}/approver-teams/${seg(name)}`, Deleted),
    );
  }

  /** POST /v1/admin/organizations/{slug}/api-keys: mints a key (the secret is in `api_key`). */
  createApiKey(slug: string, name: string, role: "client" | "admin" = "client") {
    return this.request("POST", `/v1/admin/organizations/${seg(slug)}/api-keys`, MintedKey, { name, role });
  }

  /** GET /v1/admin/organizations/{slug}/api-keys. */
  async listApiKeys(slug: string): Promise<ApiKeyInfo[]> {
    return (await this.request("GET", `/v1/admin/organizations/${seg(slug)}/api-keys`, KeyList)).api_keys;
  }

  /** POST /v1/admin/organizations/{slug}/api-keys/{key_id}/revoke (idempotent). */
  async revokeApiKey(slug: string, keyId: string): Promise<void> {
    await this.request(
      "POST",
      `/v1/admin/organizations/${seg(slug)}/api-keys/${seg(keyId)}/revoke`,
      z.looseObject({ revoked: z.boolean() }),
    );
  }

  private async ignoreMissing(p: Promise<{ deleted: boolean }>): Promise<{ deleted: boolean }> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof AdminApiError && err.status === 404) return { deleted: false };
      throw err;
    }
  }
}
