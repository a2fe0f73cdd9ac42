/**
 * The GovernancePolicy custom resource's spec (namespaced; maps to PUT
 * .../policies/{namespace}.{name}, operator/controllers/governancepolicy/mapping.ts). Leaf
 * constraints come from the policy engine's contract (src/policy/schema.ts).
 */
import { z } from "zod";
import { MAX_REPLAY_EVENTS, MAX_REPLAY_WINDOW_MS } from "../../src/contract/v1/replay.js";
import {
  CelExpressionSchema,
  ModelPriceSchema,
  OutcomeSchema,
  PayloadConditionSchema,
  PolicyConfigSchema,
  ServiceAccountPatternSchema,
  SpiffeIdSchema,
} from "../../src/policy/schema.js";
import { cel, domain, email, mapList, OrganizationRefSchema, setList, word } from "./fields.js";

const policy = PolicyConfigSchema.shape;

/** Go duration of hours, minutes and seconds ("24h", "90m", "1h30m"); the API server's CEL parses the same. */
const DURATION = /^([0-9]+h)?([0-9]+m)?([0-9]+s)?$/;

const replaySpec = z
  .object({
    window: z
      .string()
      .min(2)
      .max(20)
      .regex(DURATION)
      .refine((w) => replayWindowMs(w) > 0 && replayWindowMs(w) <= MAX_REPLAY_WINDOW_MS, {
        message: "window must be more than 0s and at most 744h (31 days)",
      })
      .meta(
        cel({
          rule: "duration(self) > duration('0s') && duration(self) <= duration('744h')",
          message: "window must be more than 0s and at most 744h (31 days)",
        }),
      )
      .describe('How far back to replay from now: a duration such as "24h" or "90m" (at most 744h).'),
    maxEvents: z
      .number()
      .int()
      .min(1)
      .max(MAX_REPLAY_EVENTS)
      .optional()
      .describe("Most events the replay reads (default 100000)."),
    enforce: z
      .boolean()
      .default(false)
      .describe(
        "false (default): replayed, not applied (the service keeps enforcing what it had); true: applied once replayed.",
      ),
  })
  .strict();

/** A `spec.replay.window` ("24h", "90m", "1h30m", "45s") in milliseconds; NaN when it is not such a duration. */
export function replayWindowMs(window: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(window);
  if (!m || window === "") return Number.NaN;
  return ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
}

const thresholds = z
  .object({
    financialApprovalUsd: policy.financial_approval_threshold_usd
      .unwrap()
      .optional()
      .describe("A single amount above this requires approval (USD)."),
    cumulativeFinancialUsd: policy.cumulative_financial_threshold_usd
      .unwrap()
      .optional()
      .describe("Chain exposure above this requires approval (USD)."),
    financialDenyUsd: policy.financial_deny_threshold_usd
      .unwrap()
      .unwrap()
      .optional()
      .describe("A single amount above this is denied outright (USD)."),
    bulkOperation: policy.bulk_operation_threshold
      .unwrap()
      .optional()
      .describe("Item count that makes an operation bulk."),
    bulkDeletion: policy.bulk_deletion_threshold
      .unwrap()
      .optional()
      .describe("Item count that makes a deletion bulk."),
  })
  .strict()
  .refine(
    (t) =>
      t.financialDenyUsd === undefined ||
      t.financialApprovalUsd === undefined ||
      t.financialDenyUsd >= t.financialApprovalUsd,
    { message: "financialDenyUsd must be at least financialApprovalUsd", path: ["financialDenyUsd"] },
  )
  .meta(
    cel({
      rule: "!has(self.financialDenyUsd) || !has(self.financialApprovalUsd) || self.financialDenyUsd >= self.financialApprovalUsd",
      message: "financialDenyUsd must be at least financialApprovalUsd",
      fieldPath: ".financialDenyUsd",
    }),
  );

/** Identity matchers (kube-agentic-networking AccessPolicy Source): OR across and within the lists. */
const identityMatchers = (who: string) => ({
  identities: z
    .array(SpiffeIdSchema)
    .max(200)
    .optional()
    .meta(setList)
    .describe(`SPIFFE IDs (exact) of the workloads ${who}; OR with serviceAccounts.`),
  serviceAccounts: z
    .array(ServiceAccountPatternSchema)
    .max(200)
    .optional()
    .meta(setList)
    .describe(`Service accounts ("<namespace>/<name>" or "<namespace>/*") of the workloads ${who}.`),
});

const agentScope = z
  .object({
    agentName: word.describe("The agent this scope applies to."),
    actionTypes: z.array(word).max(100).optional().meta(setList).describe("Allowed action types (globs)."),
    actionNames: z.array(word).max(200).optional().meta(setList).describe("Allowed action names (globs)."),
    domains: z.array(domain).max(200).optional().meta(setList).describe("Allowed destination domains."),
    ...identityMatchers("that may act as this agent (any other caller is outside the scope)"),
  })
  .strict();

/** A condition on one payload key: a literal or an operator object (the policy engine's contract). */
const payloadCondition = PayloadConditionSchema.describe(
  "A literal to compare with, or an object with eq, in, gt, gte, lt, lte, exists, contains.",
).meta({ "x-kubernetes-preserve-unknown-fields": true });

const customRule = z
  .object({
    name: z.string().min(1).max(128).describe("Unique name; reported as policy_name."),
    match: z
      .object({
        agentName: word.optional(),
        actionType: word.optional(),
        actionName: word.optional(),
        destinationDomain: word.optional(),
        payload: z
          .record(z.string(), payloadCondition)
          .optional()
          .describe("Conditions on top-level payload keys."),
        ...identityMatchers("this rule applies to (a caller without identity never matches)"),
      })
      .strict()
      .refine((m) => Object.keys(m).length > 0, { message: "match must set at least one matcher" })
      .meta({ minProperties: 1 })
      .optional()
      .describe(
        "Every given matcher must match (AND); strings accept * globs. Optional when expression is set.",
      ),
    expression: CelExpressionSchema.optional().describe(
      "CEL expression that must also be true (AND with match); variables action, identity, chain, org, now (docs/policy-cel.md). The service refuses one that does not compile.",
    ),
    outcome: OutcomeSchema.describe("Decision when it matches."),
    reason: z
      .string()
      .min(1)
      .max(1000)
      .optional()
      .describe("decision_reason; required unless outcome is allow."),
    remediation: z.string().max(1000).optional().describe("What the agent or its owner can do instead."),
    docsUrl: z.url().max(2048).optional().describe("Link to the policy's documentation."),
  })
  .strict()
  .refine((r) => r.outcome === "allow" || Boolean(r.reason), {
    message: "reason is required unless outcome is allow",
    path: ["reason"],
  })
  .refine((r) => r.match !== undefined || r.expression !== undefined, {
    message: "match or expression is required",
    path: ["match"],
  })
  .meta(
    cel(
      {
        rule: "self.outcome == 'allow' || has(self.reason)",
        message: "reason is required unless outcome is allow",
        fieldPath: ".reason",
        reason: "FieldValueRequired",
      },
      {
        rule: "has(self.match) || has(self.expression)",
        message: "match or expression is required",
        fieldPath: ".match",
        reason: "FieldValueRequired",
      },
    ),
  );

const price = {
  inputPer1kUsd: ModelPriceSchema.shape.input_per_1k_usd.describe("USD per 1,000 input tokens."),
  outputPer1kUsd: ModelPriceSchema.shape.output_per_1k_usd.describe("USD per 1,000 output tokens."),
};

/** Spec of the namespaced GovernancePolicy resource (maps to PUT .../policies/{namespace}.{name}). */
export const GovernancePolicySpecSchema = z
  .object({
    organizationRef: OrganizationRefSchema,
    policyVersion: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("Label reported in decisions' policy version."),
    thresholds: thresholds.optional().describe("Financial and bulk thresholds."),
    financialNotify: z
      .array(email)
      .max(50)
      .optional()
      .meta(setList)
      .describe("Extra recipients of financial approvals."),
    externalDomainsAllowlist: z
      .array(domain)
      .max(500)
      .optional()
      .meta(setList)
      .describe("External domains agents may contact without approval."),
    internalDomains: z
      .array(domain)
      .max(500)
      .optional()
      .meta(setList)
      .describe("Domains that count as internal."),
    highRiskAgents: z
      .array(word)
      .max(500)
      .optional()
      .meta(setList)
      .describe("Agents whose actions require approval."),
    agentScopes: z
      .array(agentScope)
      .max(500)
      .optional()
      .meta(mapList("agentName"))
      .describe("Declared scope per agent; an action outside it requires approval."),
    firstExternalCommunicationRequiresApproval: z.boolean().optional(),
    piiToExternalRequiresApproval: z.boolean().optional(),
    irreversibleActions: z
      .array(word)
      .max(200)
      .optional()
      .meta(setList)
      .describe("Action names that cannot be undone."),
    customRules: z
      .array(customRule)
      .max(200)
      .optional()
      .meta(mapList("name"))
      .describe("Rules evaluated in order."),
    expressionErrorOutcome: policy.expression_error_outcome
      .unwrap()
      .optional()
      .describe("Outcome of a custom rule whose expression fails at evaluation (fail closed)."),
    identityAgentNames: z
      .array(
        z
          .object({
            serviceAccount: ServiceAccountPatternSchema.describe(
              '"<namespace>/<name>" or "<namespace>/*" (the exact entry wins over the namespace one).',
            ),
            agentNames: z
              .array(word)
              .min(1)
              .max(200)
              .meta(setList)
              .describe("Agent names (globs) a caller with this identity may use; any other is denied."),
          })
          .strict(),
      )
      .max(500)
      .optional()
      .meta(mapList("serviceAccount"))
      .describe("Identity pinning: which agent names each workload identity may act as."),
    llmPricing: z
      .array(z.object({ model: word, ...price }).strict())
      .max(200)
      .optional()
      .meta(mapList("model"))
      .describe("Per-model prices for estimated_cost_usd."),
    defaultLlmPrice: z
      .object({
        inputPer1kUsd: price.inputPer1kUsd.optional(),
        outputPer1kUsd: price.outputPer1kUsd.optional(),
      })
      .strict()
      .optional()
      .describe("Price used for models missing from llmPricing."),
    replay: replaySpec
      .optional()
      .describe(
        "Replay before enforce: each new generation is replayed over the organization's recorded events of the window and summarized in status.replay; while enforce is false it is not applied (docs/policy-cel.md).",
      ),
  })
  .strict();
export type GovernancePolicySpec = z.infer<typeof GovernancePolicySpecSchema>;

/** `status.replay`: the summary of the last replay (POST .../policies/replay's answer, without the sample). */
export const ReplayStatusSchema = z
  .object({
    observedGeneration: z.number().int().min(0).describe("metadata.generation that was replayed."),
    from: z.string().max(64).describe("Start of the window (ISO 8601, inclusive)."),
    to: z.string().max(64).describe("End of the window (ISO 8601, exclusive)."),
    eventsRead: z.number().int().min(0).describe("Events read, earlier history of the chains included."),
    eventsReplayed: z.number().int().min(0).describe("Events of the window decided again."),
    chainsRead: z.number().int().min(0),
    changed: z.number().int().min(0).describe("Replayed events whose outcome changes."),
    changes: z
      .record(z.string().max(64), z.number().int().min(0))
      .describe('Changed outcomes by kind ("allow→deny": count).'),
    durationMs: z.number().min(0).describe("How long the replay took in the service, milliseconds."),
    truncated: z.boolean().describe("Reading stopped at a bound: later events were not replayed."),
    truncatedBy: z.enum(["max_events", "time_limit"]).optional(),
  })
  .strict();
export type ReplayStatus = z.infer<typeof ReplayStatusSchema>;
