/**
 * `tollgate policy test <dir>` (issue 28): offline policy tests, in the spirit of `kyverno test`
 * and `opa test`. No service, no cluster: the directory's GovernancePolicy resources are combined
 * exactly as the service combines an organization's policies (policy/merge.ts over the defaults),
 * and every case of its fixture files is decided by the same pure engine the service runs.
 *
 * Files of `<dir>` (not recursive):
 * - `*.yaml` / `*.yml` holding `kind: GovernancePolicy` documents (several per file allowed):
 *   the policies under test, read through the CRD's zod schema and the operator's mapping;
 * - `*.tollgate-test.yaml`: fixtures, {@link FixtureFileSchema}; `policies` may name more policy
 *   files, relative to the fixture (e.g. the manifests you `kubectl apply`):
 *
 *       policies: [../20-governancepolicy.yaml]
 *       cases:
 *         - name: large invoices need a human
 *           action: { agent_name: billing, action_type: tool_call, action_name: create_invoice,
 *                     payload: { invoice: { total: 1200 } } }
 *           identity: { namespace: payments, service_account: invoice-agent }   # optional
 *           chain: { event_count: 2, actions: [{ name: read_customer }] }       # optional
 *           expect: { outcome: require_approval, policy_name: large-invoices }
 *
 * Exit codes: 0 every case passed, 1 some case failed (a diff per failing case), 2 a file could not
 * be read or is invalid (naming the file and field). `--json` prints the report as JSON.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { z } from "zod";
import { policyBody } from "../../operator/controllers/governancepolicy/mapping.js";
import { GovernancePolicySpecSchema } from "../../operator/crds/schema.js";
import { issueLines } from "../contract/v1/issues.js";
import { evaluate } from "../policy/engine.js";
import { combinePolicies, mergePolicyConfig } from "../policy/merge.js";
import {
  ActionSchema,
  OutcomeSchema,
  PolicyConfigPatchSchema,
  PolicyConfigSchema,
  spiffeIdOf,
} from "../policy/schema.js";

/** Suffix of fixture files. */
export const FIXTURE_SUFFIX = ".tollgate-test.yaml";

/** One case of a fixture file. */
const CaseSchema = z
  .object({
    name: z.string().min(1).max(200),
    action: ActionSchema,
    /** The caller's verified identity; pod fields and the SPIFFE ID are filled when left out. */
    identity: z
      .object({
        namespace: z.string().min(1),
        service_account: z.string().min(1),
        pod_name: z.string().min(1).nullable().default("test-pod"),
        pod_uid: z.string().min(1).nullable().default("00000000-0000-0000-0000-000000000000"),
        spiffe_id: z.string().min(1).optional(),
      })
      .strict()
      .nullable()
      .default(null),
    /** The chain before the action. */
    chain: z
      .object({
        event_count: z.number().int().nonnegative().default(0),
        total_tokens: z.number().int().nonnegative().default(0),
        financial_exposure_usd: z.number().nonnegative().default(0),
        age_seconds: z.number().nonnegative().default(0),
        agents_with_external_communication: z.array(z.string()).default([]),
        actions: z
          .array(
            z
              .object({
                name: z.string().min(1),
                type: z.string().min(1).default("tool_call"),
                agent_name: z.string().min(1).default("agent"),
              })
              .strict(),
          )
          .default([]),
      })
      .strict()
      .default({
        event_count: 0,
        total_tokens: 0,
        financial_exposure_usd: 0,
        age_seconds: 0,
        agents_with_external_communication: [],
        actions: [],
      }),
    /** The organization's environment (CEL `org.environment`). */
    environment: z.string().min(1).default("production"),
    expect: z.object({ outcome: OutcomeSchema, policy_name: z.string().nullable().optional() }).strict(),
  })
  .strict();

/** A fixture file: `{ cases: [...] }`, optionally with `trust_domain` (default cluster.local). */
export const FixtureFileSchema = z
  .object({
    trust_domain: z.string().min(1).default("cluster.local"),
    /** More policy files, relative to the fixture file. */
    policies: z.array(z.string().min(1)).default([]),
    cases: z.array(CaseSchema).min(1),
  })
  .strict();

/** A file that cannot be used; the message names the file and the field. */
export class PolicyTestInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PolicyTestInputError";
  }
}

/** The result of one case. */
export interface CaseResult {
  file: string;
  name: string;
  passed: boolean;
  expected: { outcome: string; policy_name?: string | null };
  actual: { outcome: string; policy_name: string | null; decision_reason: string };
}

/** The report of a run. */
export interface PolicyTestReport {
  policies: string[];
  passed: number;
  failed: number;
  cases: CaseResult[];
}

const FIXED_NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

/**
 * Runs the tests of `dir`.
 * @throws PolicyTestInputError when the directory, a policy or a fixture cannot be read or is invalid.
 */
export async function runPolicyTests(dir: string): Promise<PolicyTestReport> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (err) {
    throw new PolicyTestInputError(`${dir}: ${(err as NodeJS.ErrnoException).code ?? "cannot read"}`);
  }
  const policies = new Map<string, z.infer<typeof PolicyConfigPatchSchema>>();
  const fixtures: { file: string; doc: z.infer<typeof FixtureFileSchema> }[] = [];
  const load = async (file: string, name: string, fixture: boolean) => {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      throw new PolicyTestInputError(`${name}: ${(err as NodeJS.ErrnoException).code ?? "cannot read"}`);
    }
    const docs = parseAllDocuments(text);
    for (const [i, d] of docs.entries()) {
      if (d.errors.length) throw new PolicyTestInputError(`${name}: ${d.errors[0]!.message}`);
      const value = d.toJSON() as unknown;
      const where = docs.length > 1 ? `${name} (document ${i + 1})` : name;
      if (fixture) {
        const parsed = FixtureFileSchema.safeParse(value);
        if (!parsed.success)
          throw new PolicyTestInputError(`${where}: ${issueLines(parsed.error).join("; ")}`);
        fixtures.push({ file: name, doc: parsed.data });
        for (const p of parsed.data.policies)
          await load(path.resolve(path.dirname(file), p), path.join(path.dirname(name), p), false);
      } else if ((value as { kind?: unknown } | null)?.kind === "GovernancePolicy") {
        const resource = value as { metadata?: { name?: string; namespace?: string }; spec?: unknown };
        const spec = GovernancePolicySpecSchema.safeParse(resource.spec);
        if (!spec.success)
          throw new PolicyTestInputError(`${where}: spec: ${issueLines(spec.error).join("; ")}`);
        const config = PolicyConfigPatchSchema.safeParse(
          policyBody(spec.data, "tollgate-policy-test").config,
        );
        if (!config.success)
          throw new PolicyTestInputError(`${where}: ${issueLines(config.error).join("; ")}`);
        policies.set(
          `${resource.metadata?.namespace ?? "default"}/${resource.metadata?.name ?? name}`,
          config.data,
        );
      }
    }
  };
  for (const name of names.filter((n) => /\.ya?ml$/.test(n) && !n.endsWith(FIXTURE_SUFFIX)))
    await load(path.join(dir, name), name, false);
  for (const name of names.filter((n) => n.endsWith(FIXTURE_SUFFIX)))
    await load(path.join(dir, name), name, true);
  if (fixtures.length === 0) throw new PolicyTestInputError(`${dir}: no *${FIXTURE_SUFFIX} file`);
  const config = mergePolicyConfig(
    PolicyConfigSchema.parse({}),
    combinePolicies([...policies].map(([name, config]) => ({ name, config }))),
  );
  const cases: CaseResult[] = [];
  for (const { file, doc } of fixtures) {
    for (const c of doc.cases) {
      const identity = c.identity && {
        ...c.identity,
        spiffe_id:
          c.identity.spiffe_id ??
          spiffeIdOf(doc.trust_domain, c.identity.namespace, c.identity.service_account),
      };
      const { decision } = evaluate({
        config,
        org: {
          kill_switch: { active: false, reason: null },
          pause: { active: false, reason: null },
          environment: c.environment,
        },
        chain: {
          started_at_ms: FIXED_NOW - c.chain.age_seconds * 1000,
          event_count: c.chain.event_count,
          total_tokens: c.chain.total_tokens,
          financial_exposure_usd: c.chain.financial_exposure_usd,
          agents_with_external_communication: c.chain.agents_with_external_communication,
          actions_so_far: c.chain.actions,
        },
        action: c.action,
        exceptions: [],
        nowMs: FIXED_NOW,
        identity,
      });
      const actual = {
        outcome: decision.policy_decision,
        policy_name: decision.policy_name,
        decision_reason: decision.decision_reason,
      };
      const passed =
        actual.outcome === c.expect.outcome &&
        (c.expect.policy_name === undefined || actual.policy_name === c.expect.policy_name);
      cases.push({ file, name: c.name, passed, expected: c.expect, actual });
    }
  }
  const failed = cases.filter((c) => !c.passed).length;
  return { policies: [...policies.keys()].sort(), passed: cases.length - failed, failed, cases };
}

/** The report as CI-log text: one line per case, a diff under each failure, a summary. */
export function formatPolicyTestReport(r: PolicyTestReport): string {
  const lines = [`Policies: ${r.policies.length ? r.policies.join(", ") : "(none: the defaults)"}`];
  for (const c of r.cases) {
    lines.push(`  ${c.passed ? "ok  " : "FAIL"}  ${c.file}: ${c.name}`);
    if (!c.passed) {
      lines.push(
        `          - expected: ${c.expected.outcome}${c.expected.policy_name !== undefined ? ` (policy ${c.expected.policy_name ?? "none"})` : ""}`,
      );
      lines.push(
        `          + actual:   ${c.actual.outcome} (policy ${c.actual.policy_name ?? "none"})${c.actual.decision_reason ? `: ${c.actual.decision_reason}` : ""}`,
      );
    }
  }
  lines.push(`${r.failed === 0 ? "PASS" : "FAIL"}: ${r.passed} passed, ${r.failed} failed`);
  return `${lines.join("\n")}\n`;
}
