/**
 * `tollgate policy replay <file>` (issue 28, "Replay before enforce"): sends a candidate policy to
 * POST /v1/policies/replay of a running service and prints what would have changed over the
 * organization's recorded events of a window.
 *
 * The file is either a `kind: GovernancePolicy` resource (YAML or JSON, as `tollgate policy test`
 * reads them, mapped as the operator maps it) or the admin API's policy body
 * (`{config: {...}}`, PUT /v1/admin/organizations/{org}/policies/{name}). The service is named by
 * `--url` (or TOLLGATE_URL) and the caller by `--api-key` (or TOLLGATE_API_KEY): an API key with
 * the admin role of the organization whose events are replayed.
 *
 * Exit codes: 0 the candidate changes no replayed decision, 1 it changes at least one (so a CI
 * step can stop a policy change that would change live decisions unless someone looked), 2 bad
 * input (arguments, unreadable or invalid file), the service unreachable, or the service
 * refusing the request (the message names the field or the HTTP status).
 */
import { readFile } from "node:fs/promises";
import { parseAllDocuments } from "yaml";
import { policyBody } from "../../operator/controllers/governancepolicy/mapping.js";
import { GovernancePolicySpecSchema } from "../../operator/crds/schema.js";
import { PolicySpecSchema } from "../contract/v1/admin.js";
import { issueLines } from "../contract/v1/issues.js";
import { type ReplayResponse, ReplayResponseSchema } from "../contract/v1/replay.js";
import type { PolicyConfigPatch } from "../policy/schema.js";

/** A replay that could not be asked for or answered; the message says why (exit code 2). */
export class PolicyReplayInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PolicyReplayInputError";
  }
}

/** Options of `tollgate policy replay` (flags, environment defaults applied by the caller). */
export interface PolicyReplayOptions {
  url?: string;
  apiKey?: string;
  /** ISO 8601; default 24 hours before `to`. */
  from?: string;
  /** ISO 8601; default now. */
  to?: string;
  /** Name of the organization's policy the candidate replaces. */
  replace?: string;
  /** Name the candidate is added under (when it replaces nothing). */
  name?: string;
  maxEvents?: string;
  sample?: string;
}

/** The window replayed when no --from is given: the last day. */
const DEFAULT_WINDOW_MS = 86_400_000;
/** How long the service may take to answer (its own replay time limit is 30 s). */
const REQUEST_TIMEOUT_MS = 60_000;

/**
 * The candidate policy configuration of a file: a GovernancePolicy resource or an admin API
 * policy body. @throws PolicyReplayInputError naming the file and the field.
 */
export async function loadCandidate(file: string): Promise<PolicyConfigPatch> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new PolicyReplayInputError(`${file}: ${(err as NodeJS.ErrnoException).code ?? "cannot read"}`);
  }
  const docs = parseAllDocuments(text);
  if (docs.length !== 1)
    throw new PolicyReplayInputError(`${file}: expected one document, found ${docs.length}`);
  const doc = docs[0]!;
  if (doc.errors.length) throw new PolicyReplayInputError(`${file}: ${doc.errors[0]!.message}`);
  const value = doc.toJSON() as { kind?: unknown; spec?: unknown } | null;
  if (value?.kind === "GovernancePolicy") {
    const spec = GovernancePolicySpecSchema.safeParse(value.spec);
    if (!spec.success)
      throw new PolicyReplayInputError(`${file}: spec: ${issueLines(spec.error).join("; ")}`);
    const body = PolicySpecSchema.safeParse(policyBody(spec.data, "tollgate-policy-replay"));
    if (!body.success) throw new PolicyReplayInputError(`${file}: ${issueLines(body.error).join("; ")}`);
    return body.data.config;
  }
  const body = PolicySpecSchema.safeParse(value);
  if (!body.success) {
    throw new PolicyReplayInputError(
      `${file}: neither a GovernancePolicy nor a policy body ({config: ...}): ${issueLines(body.error).join("; ")}`,
    );
  }
  return body.data.config;
}

const positiveInt = (flag: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new PolicyReplayInputError(`${flag}: not a whole number: ${value}`);
  return n;
};

const instant = (flag: string, value: string): string => {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new PolicyReplayInputError(`${flag}: not an ISO 8601 instant: ${value}`);
  return new Date(ms).toISOString();
};

/**
 * Replays the candidate of `file` through the service.
 * @throws PolicyReplayInputError for bad options or file, an unreachable service, or an answer
 *   other than 200 (naming the status and the service's message).
 */
export async function replayPolicyFile(
  file: string,
  opts: PolicyReplayOptions,
  fetchFn: typeof fetch,
  nowMs: number,
): Promise<ReplayResponse> {
  if (!opts.url) throw new PolicyReplayInputError("no service URL: give --url or set TOLLGATE_URL");
  if (!opts.apiKey) throw new PolicyReplayInputError("no API key: give --api-key or set TOLLGATE_API_KEY");
  let endpoint: URL;
  try {
    endpoint = new URL("/v1/policies/replay", opts.url);
  } catch {
    throw new PolicyReplayInputError(`--url: not a URL: ${opts.url}`);
  }
  const to = opts.to === undefined ? new Date(nowMs).toISOString() : instant("--to", opts.to);
  const from =
    opts.from === undefined
      ? new Date(Date.parse(to) - DEFAULT_WINDOW_MS).toISOString()
      : instant("--from", opts.from);
  const maxEvents = positiveInt("--max-events", opts.maxEvents);
  const sample = positiveInt("--sample", opts.sample);
  const body = {
    candidate: await loadCandidate(file),
    from,
    to,
    ...(opts.replace !== undefined && { replace: opts.replace }),
    ...(opts.name !== undefined && { name: opts.name }),
    ...(maxEvents !== undefined && { max_events: maxEvents }),
    ...(sample !== undefined && { sample_size: sample }),
  };
  let res: Response;
  try {
    res = await fetchFn(endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${opts.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new PolicyReplayInputError(
      `cannot reach ${endpoint.origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
    );
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PolicyReplayInputError(`${endpoint.href} answered HTTP ${res.status}, not JSON`);
  }
  if (!res.ok) {
    const e = json as { error?: { message?: string }; message?: string };
    throw new PolicyReplayInputError(
      `${endpoint.href} answered HTTP ${res.status}: ${e.error?.message ?? e.message ?? text.slice(0, 500)}`,
    );
  }
  const answer = ReplayResponseSchema.safeParse(json);
  if (!answer.success) {
    throw new PolicyReplayInputError(
      `${endpoint.href}: unexpected answer: ${issueLines(answer.error).join("; ")}`,
    );
  }
  return answer.data;
}

/** The answer as CI-log text: the window and counts, changes by kind, the sample. */
export function formatReplayReport(r: ReplayResponse): string {
  const lines = [
    `Replayed candidate "${r.candidate_name}" (${r.replaced ? "replacing the policy of that name" : "added to the organization's policies"}) over ${r.from} .. ${r.to}`,
    `  events read ${r.events_read}, replayed ${r.events_replayed}, chains ${r.chains_read}, in ${r.duration_ms} ms${
      r.truncated ? ` — TRUNCATED by ${r.truncated_by}: later events were not replayed` : ""
    }`,
  ];
  const kinds = Object.entries(r.changes).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (kinds.length === 0) lines.push("  no decision changes");
  else {
    lines.push(`  ${r.changed} decisions change:`);
    for (const [kind, n] of kinds) lines.push(`    ${kind.replace("→", " -> ").padEnd(36)} ${n}`);
  }
  if (r.sample.length) {
    lines.push(`  sample (${r.sample.length} of ${r.changed}):`);
    for (const s of r.sample) {
      lines.push(
        `    ${s.recorded_at} chain ${s.chain_id} #${s.sequence} ${s.agent_name} ${s.action_type}/${s.action_name}: ${s.before.outcome} (${s.before.policy_name ?? "no policy"}) -> ${s.after.outcome} (${s.after.policy_name ?? "no policy"})${s.after.decision_reason ? `: ${s.after.decision_reason}` : ""}`,
      );
    }
  }
  lines.push(r.changed === 0 ? "NO CHANGES" : `CHANGES: ${r.changed}`);
  return `${lines.join("\n")}\n`;
}
