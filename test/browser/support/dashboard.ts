/**
 * Helpers for driving the dashboard in-process (without a browser): sessions created by the
 * same code the OIDC callback uses, form posts with CSRF tokens read from the pages, and
 * approval fixtures created through the API.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import type { Clock } from "../../../src/service/clock.js";
import type { Database } from "../../../src/service/db/pool.js";
import { membershipsOf, startDashboardSession } from "../../../src/service/oidc/membership.js";

/** A dashboard session token (tgs_…) for `email` in organization `slug`. */
export async function sessionFor(db: Database, clock: Clock, email: string, slug: string): Promise<string> {
  const m = (await membershipsOf(db, email)).find((x) => x.slug === slug);
  if (!m) throw new Error(`${email} has no membership in ${slug}`);
  return (await startDashboardSession(db, { membership: m, email, clock })).token;
}

/** The first CSRF token on a page. */
export function csrfOf(html: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(html);
  if (!m) throw new Error("no CSRF field on the page");
  return m[1]!;
}

/** GET with a session token. */
export function get(app: FastifyInstance, url: string, token?: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: "GET", url, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** POST an HTML form (application/x-www-form-urlencoded). */
export function postForm(
  app: FastifyInstance,
  url: string,
  token: string | undefined,
  fields: Record<string, string | string[]>,
): Promise<LightMyRequestResponse> {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
  return app.inject({
    method: "POST",
    url,
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(token && { authorization: `Bearer ${token}` }),
    },
    payload: body.toString(),
  });
}

/** Calls the JSON API. */
export async function api(
  app: FastifyInstance,
  method: string,
  url: string,
  token: string,
  body?: unknown,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: method as "GET",
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(body !== undefined && { payload: body as Record<string, unknown> }),
  });
}

/** Opens a chain and records an action that requires approval (amount above 5000 USD). */
export async function pendingApproval(
  app: FastifyInstance,
  clientKey: string,
  opts: { chain?: string; agent?: string; amount?: number } = {},
): Promise<{ chainId: string; approvalId: string }> {
  const c = await api(app, "POST", "/v1/chains", clientKey, { name: opts.chain ?? "invoice-run" });
  if (c.statusCode !== 201) throw new Error(`create chain: ${c.body}`);
  const chainId = c.json().chain_id as string;
  const a = await api(app, "POST", `/v1/chains/${chainId}/actions`, clientKey, {
    agent_name: opts.agent ?? "payments-agent",
    action_type: "tool_call",
    action_name: "wire_transfer",
    payload: {
      amount_usd: opts.amount ?? 7500,
      beneficiary: "ACME GmbH",
      api_key: "sk_live_should_be_redacted",
    },
  });
  if (a.json().policy_decision !== "require_approval")
    throw new Error(`expected require_approval: ${a.body}`);
  return { chainId, approvalId: a.json().approval_id as string };
}
