/**
 * The policy engine's data contract: organization policy configuration, chain state, the action
 * being evaluated, time-boxed exceptions and the PolicyDecision (spec: "Resources and their
 * fields" → PolicyDecision, "Limits"). These zod schemas are the single source of truth for
 * the HTTP API, the engine's TypeScript types and the GovernancePolicy CRD schema.
 *
 * Wire and JSON keys are the spec's snake_case.
 */
import { z } from "zod";
import { CEL_LIMITS, compileExpression } from "./cel.js";

/** The four policy outcomes (spec: "What the service does" 2). */
export const Outcome = {
  allow: "allow",
  allow_with_flag: "allow_with_flag",
  require_approval: "require_approval",
  deny: "deny",
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];
export const OutcomeSchema = z.enum(["allow", "allow_with_flag", "require_approval", "deny"]);

/** enforce: the decision is applied; shadow: the decision is only reported in shadow_decision. */
export const EvaluationModeSchema = z.enum(["enforce", "shadow"]);
export type EvaluationMode = z.infer<typeof EvaluationModeSchema>;

const domain = z
  .string()
  .min(1)
  .max(253)
  .regex(
    /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
    "must be a domain name",
  );

/** A condition on one top-level payload key of a custom rule. Numbers compare numerically. */
export const PayloadConditionSchema = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z
    .object({
      eq: z.union([z.string(), z.number(), z.boolean()]).optional(),
      in: z.array(z.union([z.string(), z.number()])).optional(),
      gt: z.number().optional(),
      gte: z.number().optional(),
      lt: z.number().optional(),
      lte: z.number().optional(),
      exists: z.boolean().optional(),
      contains: z.string().optional(),
    })
    .strict(),
]);
export type PayloadCondition = z.infer<typeof PayloadConditionSchema>;

/**
 * A SPIFFE ID, matched exactly (`spiffe://<trust-domain>/<path>`, e.g.
 * `spiffe://cluster.local/ns/payments/sa/invoice-agent`).
 */
export const SpiffeIdSchema = z
  .string()
  .min(10)
  .max(600)
  .regex(/^spiffe:\/\/[a-z0-9._-]+(\/[^/\s]+)+$/, "must be a SPIFFE ID: spiffe://<trust-domain>/<path>");

/**
 * A Kubernetes service account pattern: `<namespace>/<name>` (that service account) or
 * `<namespace>/*` (every service account of the namespace). A bare name or `*` alone is refused.
 */
export const ServiceAccountPatternSchema = z
  .string()
  .min(3)
  .max(317)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/(\*|[a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/,
    'must be "<namespace>/<service-account>" or "<namespace>/*"',
  );

/**
 * The identity matchers shared by custom rules and agent scopes (kube-agentic-networking
 * AccessPolicy `Source` semantics): the caller matches when its SPIFFE ID is in `identities`
 * OR its service account matches an entry of `service_accounts` (OR across and within the
 * lists). A caller without a verified identity (null) never matches.
 */
const identityMatchers = {
  /** SPIFFE IDs, exact match. */
  identities: z.array(SpiffeIdSchema).max(200).optional(),
  /** `<namespace>/<name>` or `<namespace>/*`. */
  service_accounts: z.array(ServiceAccountPatternSchema).max(200).optional(),
};

/**
 * A CEL expression (docs/policy-cel.md, src/policy/cel.ts for the variables and bounds): a
 * string the library parses; {@link CustomRuleSchema} refuses one that does not compile.
 */
export const CelExpressionSchema = z.string().min(1).max(CEL_LIMITS.maxLength);

/**
 * A custom rule: every given matcher must match (AND); string matchers accept `*` globs.
 * `outcome` is applied when it matches; deny rules win over everything except the kill switch.
 * `match.identities` / `match.service_accounts` match the caller's verified workload identity
 * (a caller without one never matches a rule that sets them). `expression` is a CEL expression
 * that must also evaluate to true (AND, evaluated only when every other matcher matched); an
 * expression that does not compile is refused (issue on `expression`, naming the rule and the
 * line and column); one that fails at evaluation fails closed (expression_error_outcome).
 */
export const CustomRuleSchema = z
  .object({
    name: z.string().min(1).max(128),
    match: z
      .object({
        agent_name: z.string().min(1).optional(),
        action_type: z.string().min(1).optional(),
        action_name: z.string().min(1).optional(),
        destination_domain: z.string().min(1).optional(),
        payload: z.record(z.string(), PayloadConditionSchema).optional(),
        ...identityMatchers,
      })
      .strict()
      .default({}),
    expression: CelExpressionSchema.optional(),
    outcome: OutcomeSchema,
    reason: z.string().max(1000).default(""),
    remediation: z.string().max(1000).nullable().optional(),
    docs_url: z.string().url().nullable().optional(),
  })
  .strict()
  .superRefine((rule, ctx) => {
    if (rule.expression === undefined) return;
    const compiled = compileExpression(rule.expression);
    if (!compiled.ok) {
      ctx.addIssue({
        code: "custom",
        path: ["expression"],
        message: `custom rule "${rule.name}": invalid CEL expression: ${compiled.error.message}`,
      });
    }
  });
export type CustomRule = z.infer<typeof CustomRuleSchema>;

/**
 * What an agent is declared to do; an action outside it requires approval. Lists accept `*`
 * globs. `identities` / `service_accounts` (identity matchers, see CustomRuleSchema): only
 * those workload identities may act as this agent; any other caller — one without a verified
 * identity included — is outside the scope.
 */
export const AgentScopeSchema = z
  .object({
    action_types: z.array(z.string().min(1)).optional(),
    action_names: z.array(z.string().min(1)).optional(),
    domains: z.array(domain).optional(),
    ...identityMatchers,
  })
  .strict();
export type AgentScope = z.infer<typeof AgentScopeSchema>;

/** USD per 1,000 tokens for an LLM model; used for estimated_cost_usd of llm_call events. */
export const ModelPriceSchema = z
  .object({ input_per_1k_usd: z.number().nonnegative(), output_per_1k_usd: z.number().nonnegative() })
  .strict();

/** Runaway limits: the chain auto-pauses at the action that crosses one. 0 disables a limit. */
export const RunawayLimitsSchema = z
  .object({
    max_events: z.number().int().nonnegative().default(1000),
    max_duration_seconds: z.number().nonnegative().default(86_400),
    max_tokens: z.number().int().nonnegative().default(2_000_000),
  })
  .strict();
export type RunawayLimits = z.infer<typeof RunawayLimitsSchema>;

/**
 * The complete policy configuration an action is evaluated against (spec: "Limits",
 * init() parameters). Every key has the spec's default. Amounts are USD.
 */
export const PolicyConfigSchema = z
  .object({
    financial_approval_threshold_usd: z.number().nonnegative().default(5000),
    cumulative_financial_threshold_usd: z.number().nonnegative().default(10000),
    /** Above this single amount the action is denied outright (add_financial_threshold(deny=true)). */
    financial_deny_threshold_usd: z.number().nonnegative().nullable().default(null),
    /** Extra recipients notified for financial approvals (add_financial_threshold(notify=...)). */
    financial_notify: z.array(z.string().email()).default([]),
    external_domains_allowlist: z.array(domain).default([]),
    /** Domains that count as internal (never external communication), e.g. the org's own. */
    internal_domains: z.array(domain).default([]),
    high_risk_agents: z.array(z.string().min(1)).default([]),
    agent_scopes: z.record(z.string(), AgentScopeSchema).default({}),
    first_external_communication_requires_approval: z.boolean().default(true),
    bulk_operation_threshold: z.number().int().positive().default(100),
    bulk_deletion_threshold: z.number().int().positive().default(10),
    irreversible_actions: z
      .array(z.string().min(1))
      .default([
        "sign_contract",
        "contract_signing",
        "publish_post",
        "public_post",
        "post_publicly",
        "file_legal",
        "legal_filing",
      ]),
    pii_to_external_requires_approval: z.boolean().default(true),
    custom_rules: z.array(CustomRuleSchema).default([]),
    /**
     * Identity pinning: service account pattern (`<ns>/<name>` or `<ns>/*`) → the agent names
     * (globs) a caller with that identity may use. When the caller's identity has an entry (the
     * exact `<ns>/<name>` one if present, else `<ns>/*`) and its agent_name matches none of the
     * entry's names, the action is denied (policy_name "identity_agent_names"). Callers without
     * an identity, and identities without an entry, are not affected.
     */
    identity_agent_names: z
      .record(ServiceAccountPatternSchema, z.array(z.string().min(1).max(200)).min(1).max(200))
      .default({}),
    /** Outcome of a custom rule whose expression fails at evaluation (fail closed). */
    expression_error_outcome: z.enum(["require_approval", "deny"]).default("require_approval"),
    evaluation_mode: EvaluationModeSchema.default("enforce"),
    runaway_limits: RunawayLimitsSchema.default({
      max_events: 1000,
      max_duration_seconds: 86_400,
      max_tokens: 2_000_000,
    }),
    llm_pricing: z.record(z.string(), ModelPriceSchema).default({}),
    /** Price used for a model missing from llm_pricing. */
    default_llm_price: ModelPriceSchema.default({ input_per_1k_usd: 0.003, output_per_1k_usd: 0.015 }),
  })
  .strict();
export type PolicyConfig = z.infer<typeof PolicyConfigSchema>;

/**
 * A per-chain or per-policy override: any subset of PolicyConfig, merged key by key.
 * Caution: zod 4 keeps the inner `.default()`s under `.partial()`, so PARSING with this schema
 * fills in every default (`PolicyConfigOverrideSchema.parse({})` is a full default config).
 * Validate untrusted overrides with {@link PolicyConfigPatchSchema} instead.
 */
export const PolicyConfigOverrideSchema = PolicyConfigSchema.partial();
export type PolicyConfigOverride = z.infer<typeof PolicyConfigOverrideSchema>;

/** The spec's default configuration (all defaults applied). */
export const defaultPolicyConfig = (): PolicyConfig => PolicyConfigSchema.parse({});

/** Organization-level state that is not part of the policy configuration. */
export interface OrgState {
  kill_switch: { active: boolean; reason: string | null };
  pause: { active: boolean; reason: string | null };
  /**
   * The organization's environment label (CEL `org.environment`). Optional: when the caller
   * leaves it out, an expression that reads it fails closed.
   */
  environment?: string | null;
}

/** The recorded action (spec: "Recorded action"). payload is already sanitized. */
export const ActionSchema = z
  .object({
    agent_name: z.string().min(1).max(200),
    action_type: z.string().min(1).max(100),
    action_name: z.string().min(1).max(200),
    payload: z.record(z.string(), z.unknown()).default({}),
    parent_agent_name: z.string().min(1).max(200).nullable().optional(),
  })
  .strict();
export type Action = z.infer<typeof ActionSchema>;

/**
 * The verified workload identity of the caller (issue 27): the Kubernetes principal the service
 * verified from the pod's projected service account token (TokenReview). null for callers
 * authenticated by an API key or a session (the demo, SDK users outside Kubernetes, CI jobs).
 * `agent_name` stays the caller's own label; this is who the service knows is asking.
 */
export const WorkloadIdentitySchema = z
  .object({
    /** Namespace of the pod (and of its service account). */
    namespace: z.string().min(1).max(253),
    /** Service account name, without the namespace (e.g. "invoice-agent"). */
    service_account: z.string().min(1).max(253),
    /** Name of the pod the token is bound to; null for a token bound to no pod. */
    pod_name: z.string().min(1).max(253).nullable(),
    /** UID of that pod; null for a token bound to no pod. */
    pod_uid: z.string().min(1).max(64).nullable(),
    /** SPIFFE form: `spiffe://<trust-domain>/ns/<namespace>/sa/<service_account>`. */
    spiffe_id: z.string().min(1).max(600),
  })
  .strict();
export type WorkloadIdentity = z.infer<typeof WorkloadIdentitySchema>;

/** SPIFFE ID of a service account: `spiffe://<trustDomain>/ns/<namespace>/sa/<serviceAccount>`. */
export const spiffeIdOf = (trustDomain: string, namespace: string, serviceAccount: string): string =>
  `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;

/** What the engine needs to know about the chain so far (before this action). */
export interface ChainState {
  /** Epoch milliseconds the chain was opened. */
  started_at_ms: number;
  /** Actions recorded before this one. */
  event_count: number;
  /** LLM tokens used before this action. */
  total_tokens: number;
  /** Sum of amounts (USD) of allowed financial actions before this one. */
  financial_exposure_usd: number;
  /** Agents that already made an allowed or approved external communication in this chain. */
  agents_with_external_communication: string[];
  /**
   * Every action recorded in this chain before this one, in sequence order, whatever its
   * decision (CEL `chain.actions`). Optional: the caller fills it when the configuration reads
   * it ({@link configUsesChainActions}); when absent, an expression reading `chain.actions`
   * fails closed.
   */
  actions_so_far?: ChainActionSummary[];
}

/** One earlier action of the chain, as CEL `chain.actions` shows it ({name, type, agentName}). */
export interface ChainActionSummary {
  /** action_name. */
  name: string;
  /** action_type. */
  type: string;
  agent_name: string;
}

/** An active time-boxed exception (spec: "Time-boxed exception"). */
export interface ActiveException {
  exception_id: string;
  agent_name: string;
  action_type: string;
  /** null when the original action had no destination domain. */
  destination_domain: string | null;
  /** Epoch milliseconds. */
  expires_at_ms: number;
}

/** The PolicyDecision of the spec, every field with its default. */
export const PolicyDecisionSchema = z.object({
  policy_decision: OutcomeSchema,
  decision_reason: z.string(),
  decision_source: z.enum(["backend_evaluation", "human_approval"]),
  policy_name: z.string().nullable(),
  kill_switch_active: z.boolean(),
  pause_reason: z.string().nullable(),
  remediation: z.string().nullable(),
  docs_url: z.string().nullable(),
  evaluation_mode: EvaluationModeSchema.nullable(),
  shadow_decision: OutcomeSchema.nullable(),
  estimated_cost_usd: z.number().nullable(),
  auto_paused: z.boolean(),
});
export type PolicyDecision = z.infer<typeof PolicyDecisionSchema>;

/** Action categories used for fail modes (spec: init fail_modes) and metrics. */
export const ActionCategory = {
  financial: "financial",
  external_communication: "external_communication",
  bulk_deletion: "bulk_deletion",
  bulk_operation: "bulk_operation",
  irreversible: "irreversible",
  llm_call: "llm_call",
  default: "default",
} as const;
export type ActionCategory = (typeof ActionCategory)[keyof typeof ActionCategory];

const policyShape = PolicyConfigSchema.shape;
const limitsShape = RunawayLimitsSchema.shape;

/**
 * Runaway limits as a patch: any subset of the three limits, no defaults filled in.
 * Used inside {@link PolicyConfigPatchSchema}; merged per key over the base limits.
 */
export const RunawayLimitsPatchSchema = z
  .object({
    max_events: limitsShape.max_events.unwrap().optional(),
    max_duration_seconds: limitsShape.max_duration_seconds.unwrap().optional(),
    max_tokens: limitsShape.max_tokens.unwrap().optional(),
  })
  .strict();

/**
 * A policy configuration patch: any subset of PolicyConfig with the same constraints but NO
 * defaults filled in, and runaway_limits / default_llm_price accepted partially (they are
 * merged per key). Use this, not {@link PolicyConfigOverrideSchema}, to validate a chain's
 * policy_config or a GovernancePolicy spec: in zod 4 `.partial()` keeps inner `.default()`s,
 * so `PolicyConfigOverrideSchema.parse({})` returns a complete default config, which would
 * overwrite every organization setting when merged. `PolicyConfigPatchSchema.parse({})` is `{}`.
 * (spec: Chain → policy_config "merged key by key over the organization config").
 */
export const PolicyConfigPatchSchema = z
  .object({
    financial_approval_threshold_usd: policyShape.financial_approval_threshold_usd.unwrap().optional(),
    cumulative_financial_threshold_usd: policyShape.cumulative_financial_threshold_usd.unwrap().optional(),
    financial_deny_threshold_usd: policyShape.financial_deny_threshold_usd.unwrap().optional(),
    financial_notify: policyShape.financial_notify.unwrap().optional(),
    external_domains_allowlist: policyShape.external_domains_allowlist.unwrap().optional(),
    internal_domains: policyShape.internal_domains.unwrap().optional(),
    high_risk_agents: policyShape.high_risk_agents.unwrap().optional(),
    agent_scopes: policyShape.agent_scopes.unwrap().optional(),
    first_external_communication_requires_approval: policyShape.first_external_communication_requires_approval
      .unwrap()
      .optional(),
    bulk_operation_threshold: policyShape.bulk_operation_threshold.unwrap().optional(),
    bulk_deletion_threshold: policyShape.bulk_deletion_threshold.unwrap().optional(),
    irreversible_actions: policyShape.irreversible_actions.unwrap().optional(),
    pii_to_external_requires_approval: policyShape.pii_to_external_requires_approval.unwrap().optional(),
    custom_rules: policyShape.custom_rules.unwrap().optional(),
    identity_agent_names: policyShape.identity_agent_names.unwrap().optional(),
    expression_error_outcome: policyShape.expression_error_outcome.unwrap().optional(),
    evaluation_mode: policyShape.evaluation_mode.unwrap().optional(),
    runaway_limits: RunawayLimitsPatchSchema.optional(),
    llm_pricing: policyShape.llm_pricing.unwrap().optional(),
    default_llm_price: ModelPriceSchema.partial().optional(),
  })
  .strict();
/** A parsed {@link PolicyConfigPatchSchema}; every PolicyConfigOverride is also a PolicyConfigPatch. */
export type PolicyConfigPatch = z.infer<typeof PolicyConfigPatchSchema>;

/**
 * Whether any custom rule's expression reads `chain.actions`: the caller (the service) must then
 * fill ChainState.actions_so_far, and may skip reading the chain's actions otherwise. Pure;
 * expressions that do not compile count as not reading it.
 */
export const configUsesChainActions = (config: Pick<PolicyConfig, "custom_rules">): boolean =>
  config.custom_rules.some((rule) => {
    if (rule.expression === undefined) return false;
    const compiled = compileExpression(rule.expression);
    return compiled.ok && compiled.program.usesChainActions;
  });
