/**
 * The policy engine: (policy config, organization state, chain state, action, active exceptions,
 * now) → PolicyDecision. Pure: no I/O, no clock reads (the caller passes `nowMs`), never throws
 * on any payload. Spec: "PolicyDecision", "Time-boxed exception", "Limits", "States and
 * transitions".
 *
 * Decision order
 * ==============
 * 1. Gates — checked first, in this order; the first that holds decides `deny`, and they apply
 *    in shadow mode too (they are operational controls, not policy):
 *    a. kill switch active          → deny, kill_switch_active true, reason = kill switch reason,
 *                                     policy_name "kill_switch"
 *    b. runaway limits (auto-pause) → deny, auto_paused true, policy_name "runaway_limits", in the
 *                                     order max_events (event_count + 1 > max), max_duration_seconds
 *                                     ((nowMs − started_at_ms) / 1000 > max), max_tokens
 *                                     (total_tokens + this action's tokens > max); 0 disables a limit
 *    c. organization paused         → deny, pause_reason set, policy_name "org_pause"
 * 2. Triggers — first the identity pin (identity_agent_names: deny when the caller's verified
 *    identity has an entry and the action's agent_name matches none of its names), then every
 *    custom rule that matches (list order), then the built-in rules in this order:
 *    financial_deny_threshold (deny), financial_approval_threshold, cumulative_financial_threshold,
 *    first_external_communication (require_approval), exfiltration_alert (allow_with_flag),
 *    bulk_deletion, bulk_operation, irreversible_action, high_risk_agent, agent_scope (also: the
 *    caller's identity is not one the scope's identities / service_accounts allow),
 *    pii_to_external (all require_approval).
 *    A custom rule matches when every matcher matches and then, if it has an `expression`, the
 *    CEL expression evaluates to true. An expression that fails at evaluation (or gives a
 *    non-bool) is a trigger of its own: outcome expression_error_outcome (require_approval by
 *    default, or deny), policy_name the rule's name, the error in decision_reason — never a
 *    silent non-match.
 * 3. Outcome — the most severe trigger (deny > require_approval > allow_with_flag > allow); among
 *    equally severe triggers the first collected (so custom rules before built-ins) supplies
 *    policy_name, decision_reason, remediation and docs_url. No trigger → allow, reason "".
 *    A custom rule with outcome allow never lowers the outcome of another trigger.
 * 4. Time-boxed exception — when the outcome is require_approval and an active exception
 *    (expires_at_ms > nowMs) has the same agent_name, action_type and destination_domain (null
 *    matches only null; domains case-insensitive) → allow_with_flag, exception_id set. The first
 *    matching exception in input order is used. Exceptions never override deny.
 * 5. Shadow mode — policy_decision becomes allow when the enforce outcome is allow, else
 *    allow_with_flag; shadow_decision is the enforce outcome (gates of step 1 still deny). In
 *    enforce mode shadow_decision is null. evaluation_mode is always reported.
 * 6. estimated_cost_usd is set for llm_call (whatever the outcome); decision_source is always
 *    "backend_evaluation" (human_approval is the service's business).
 */
import { type CelProgram, celBindings, compileExpression, evaluateExpression } from "./cel.js";
import { type ActionFacts, domainInList, extractFacts, ownValue, toFiniteNumber } from "./facts.js";
import type {
  Action,
  ActionCategory,
  ActiveException,
  ChainState,
  CustomRule,
  EvaluationMode,
  OrgState,
  PayloadCondition,
  PolicyConfig,
  PolicyDecision,
  WorkloadIdentity,
} from "./schema.js";
import { Outcome } from "./schema.js";

/** What fired: a gate, a custom rule or a built-in rule. Also the built-in policy_name. */
export const TriggerKind = {
  kill_switch: "kill_switch",
  runaway_limits: "runaway_limits",
  org_pause: "org_pause",
  custom_rule: "custom_rule",
  financial_deny_threshold: "financial_deny_threshold",
  financial_approval_threshold: "financial_approval_threshold",
  cumulative_financial_threshold: "cumulative_financial_threshold",
  first_external_communication: "first_external_communication",
  exfiltration_alert: "exfiltration_alert",
  bulk_deletion: "bulk_deletion",
  bulk_operation: "bulk_operation",
  irreversible_action: "irreversible_action",
  high_risk_agent: "high_risk_agent",
  agent_scope: "agent_scope",
  pii_to_external: "pii_to_external",
  identity_agent_names: "identity_agent_names",
} as const;
export type TriggerKind = (typeof TriggerKind)[keyof typeof TriggerKind];

/** One rule that matched the action. */
export interface Trigger {
  kind: TriggerKind;
  outcome: Outcome;
  /** Human-readable; becomes decision_reason when this trigger decides. */
  reason: string;
  /** The custom rule's name, or the built-in kind (e.g. "financial_approval_threshold"). */
  policy_name: string;
  remediation: string | null;
  docs_url: string | null;
}

/** Everything one evaluation needs. Amounts in USD, times in epoch milliseconds. */
export interface EvaluationInput {
  /** The effective configuration (see mergePolicyConfig). */
  config: PolicyConfig;
  org: OrgState;
  /** The chain before this action. */
  chain: ChainState;
  action: Action;
  /** Exceptions of the organization; expired ones are ignored. */
  exceptions: readonly ActiveException[];
  /** The caller's verified workload identity; null (or absent) for API-key and session callers. */
  identity?: WorkloadIdentity | null;
  /** The evaluation instant, epoch milliseconds. */
  nowMs: number;
  /**
   * Base URL of the policy documentation; when set, a built-in trigger's docs_url is
   * `${docsBaseUrl}#${kind}`. Without it built-in triggers have docs_url null.
   */
  docsBaseUrl?: string;
}

/** The scope (agent, action type, destination domain) of a time-boxed exception. */
export interface ExceptionScope {
  agent_name: string;
  action_type: string;
  destination_domain: string | null;
}

/** What this action adds to the chain's cumulative metrics once it is executed (receipt fields). */
export interface MetricsDelta {
  /** |amount_usd| of a financial action, else 0. */
  financial_exposure_usd: number;
  /** 1 for an external communication, else 0. */
  external_communications: number;
  /** record_count, or 0 when unknown. */
  records_modified: number;
  /** External domains contacted (never internal ones). */
  domains: string[];
  /** estimated_cost_usd of an llm_call, else 0. */
  estimated_cost_usd: number;
  /** LLM tokens of an llm_call, else 0. */
  tokens: number;
}

/** The result of {@link evaluate}. */
export interface Evaluation {
  decision: PolicyDecision;
  facts: ActionFacts;
  category: ActionCategory;
  /** Every gate and rule that matched, in decision order (gates first). */
  triggers: Trigger[];
  /** The exception that turned require_approval into allow_with_flag, else null. */
  exception_id: string | null;
  /** The scope an exception granted on this action would have. */
  exception_scope: ExceptionScope;
  metrics_delta: MetricsDelta;
}

/** Outcome severity; higher wins. */
export const SEVERITY: Readonly<Record<Outcome, number>> = {
  allow: 0,
  allow_with_flag: 1,
  require_approval: 2,
  deny: 3,
};

/**
 * Glob match: `*` matches any sequence (also empty); everything else literally, case-sensitive.
 * Linear-time (no regular expression, no backtracking blow-up).
 */
export const globMatch = (pattern: string, text: string): boolean => {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== "*" && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      resume = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
};

/**
 * One formatter for every amount: `toLocaleString` with options builds a new Intl.NumberFormat
 * per call, a cost paid by every action over a threshold (the same output).
 */
const USD_FORMAT = new Intl.NumberFormat("en-US", { minimumFractionDigits: 0, maximumFractionDigits: 2 });

const usd = (amount: number): string => `$${USD_FORMAT.format(amount)}`;

/** What a rule sees: the effective config, the states, the action and its derived facts. */
export interface RuleContext {
  config: PolicyConfig;
  chain: ChainState;
  org: OrgState;
  action: Action;
  facts: ActionFacts;
  /** The caller's verified workload identity, null when it has none. */
  identity: WorkloadIdentity | null;
  nowMs: number;
}

/** A small pure predicate: the trigger it produces for the action, or null when it does not apply. */
export type Rule = (ctx: RuleContext) => Trigger | null;

const trigger = (
  kind: TriggerKind,
  outcome: Outcome,
  reason: string,
  remediation: string | null,
): Trigger => ({
  kind,
  outcome,
  reason,
  policy_name: kind,
  remediation,
  docs_url: null,
});

// ---------------------------------------------------------------------------------------------
// Gates (step 1)
// ---------------------------------------------------------------------------------------------

const killSwitch: Rule = ({ org }) =>
  org.kill_switch.active
    ? trigger(
        TriggerKind.kill_switch,
        Outcome.deny,
        org.kill_switch.reason || "The organization kill switch is active",
        "An organization admin must deactivate the kill switch",
      )
    : null;

const maxEvents: Rule = ({ config, chain }) => {
  const max = config.runaway_limits.max_events;
  const n = chain.event_count + 1;
  return max > 0 && n > max
    ? trigger(
        TriggerKind.runaway_limits,
        Outcome.deny,
        `Runaway limit max_events reached: this would be action ${n} of the chain, the limit is ${max}`,
        "Raise runaway_limits.max_events, or split the work into several chains",
      )
    : null;
};

const maxDuration: Rule = ({ config, chain, nowMs }) => {
  const max = config.runaway_limits.max_duration_seconds;
  const elapsed = (nowMs - chain.started_at_ms) / 1000;
  return max > 0 && elapsed > max
    ? trigger(
        TriggerKind.runaway_limits,
        Outcome.deny,
        `Runaway limit max_duration_seconds reached: the chain has run ${Math.floor(elapsed)} s, the limit is ${max} s`,
        "Raise runaway_limits.max_duration_seconds, or split the work into several chains",
      )
    : null;
};

const maxTokens: Rule = ({ config, chain, facts }) => {
  const max = config.runaway_limits.max_tokens;
  const total = chain.total_tokens + facts.tokens;
  return max > 0 && total > max
    ? trigger(
        TriggerKind.runaway_limits,
        Outcome.deny,
        `Runaway limit max_tokens reached: this action brings the chain to ${total} tokens, the limit is ${max}`,
        "Raise runaway_limits.max_tokens, or split the work into several chains",
      )
    : null;
};

const orgPause: Rule = ({ org }) =>
  org.pause.active
    ? trigger(
        TriggerKind.org_pause,
        Outcome.deny,
        org.pause.reason ? `The organization is paused: ${org.pause.reason}` : "The organization is paused",
        "An organization admin must resume the organization",
      )
    : null;

/** The gates of step 1, in order; the first that fires decides. */
export const GATES: readonly Rule[] = [killSwitch, maxEvents, maxDuration, maxTokens, orgPause];

// ---------------------------------------------------------------------------------------------
// Custom rules
// ---------------------------------------------------------------------------------------------

const conditionEquals = (expected: string | number | boolean, actual: unknown): boolean =>
  typeof expected === "number" ? toFiniteNumber(actual) === expected : actual === expected;

const compare = (actual: unknown, test: (n: number) => boolean): boolean => {
  const n = toFiniteNumber(actual);
  return n !== null && test(n);
};

/**
 * Whether a payload value satisfies a condition. A literal means `eq`. Numbers compare
 * numerically (a numeric string "5000" equals 5000); gt/gte/lt/lte fail on non-numeric values;
 * `contains` tests a substring of a string or an element of an array; `exists` tests presence;
 * every operator given must hold.
 */
export const conditionHolds = (condition: PayloadCondition, actual: unknown): boolean => {
  if (typeof condition !== "object") return conditionEquals(condition, actual);
  const c = condition;
  return (
    (c.exists === undefined || (actual !== undefined) === c.exists) &&
    (c.eq === undefined || conditionEquals(c.eq, actual)) &&
    (c.in === undefined || c.in.some((item) => conditionEquals(item, actual))) &&
    (c.gt === undefined || compare(actual, (n) => n > (c.gt as number))) &&
    (c.gte === undefined || compare(actual, (n) => n >= (c.gte as number))) &&
    (c.lt === undefined || compare(actual, (n) => n < (c.lt as number))) &&
    (c.lte === undefined || compare(actual, (n) => n <= (c.lte as number))) &&
    (c.contains === undefined ||
      (typeof actual === "string" && actual.includes(c.contains)) ||
      (Array.isArray(actual) && actual.includes(c.contains)))
  );
};

/** The identity matchers of a custom rule or an agent scope. */
export interface IdentityMatchers {
  /** SPIFFE IDs, exact match. */
  identities?: readonly string[];
  /** `<namespace>/<name>` or `<namespace>/*`. */
  service_accounts?: readonly string[];
}

/** `<namespace>/<name>` of an identity (the form service account patterns are written in). */
export const serviceAccountOf = (identity: WorkloadIdentity): string =>
  `${identity.namespace}/${identity.service_account}`;

/** Whether a service account pattern (`ns/name` or `ns/*`) matches the identity. */
export const serviceAccountPatternMatches = (pattern: string, identity: WorkloadIdentity): boolean => {
  const slash = pattern.indexOf("/");
  if (slash < 0) return false;
  const namespace = pattern.slice(0, slash);
  const name = pattern.slice(slash + 1);
  return namespace === identity.namespace && (name === "*" || name === identity.service_account);
};

/**
 * Whether the caller satisfies identity matchers (kube-agentic-networking AccessPolicy `Source`):
 * true when neither list is given; otherwise the caller must have an identity, and its SPIFFE ID
 * is in `identities` OR its service account matches an entry of `service_accounts`.
 */
export const identityMatches = (
  m: IdentityMatchers,
  identity: WorkloadIdentity | null | undefined,
): boolean => {
  if (m.identities === undefined && m.service_accounts === undefined) return true;
  if (identity == null) return false;
  return (
    (m.identities?.includes(identity.spiffe_id) ?? false) ||
    (m.service_accounts?.some((p) => serviceAccountPatternMatches(p, identity)) ?? false)
  );
};

/**
 * Whether a custom rule's matchers match (the expression, if any, is evaluated separately and
 * only when they do): every matcher given must match. agent_name, action_type and action_name
 * are case-sensitive globs; destination_domain is a case-insensitive glob tested against every
 * destination domain of the action (an action without one never matches it); payload
 * conditions read top-level keys only; identities / service_accounts see {@link identityMatches}
 * (a caller without identity never matches a rule that sets them).
 */
export const customRuleMatches = (
  rule: CustomRule,
  action: Action,
  facts: ActionFacts,
  identity: WorkloadIdentity | null = null,
): boolean => {
  const m = rule.match;
  const payload = typeof action.payload === "object" && action.payload !== null ? action.payload : {};
  const domainPattern = m.destination_domain?.toLowerCase();
  return (
    (m.agent_name === undefined || globMatch(m.agent_name, action.agent_name)) &&
    (m.action_type === undefined || globMatch(m.action_type, action.action_type)) &&
    (m.action_name === undefined || globMatch(m.action_name, action.action_name)) &&
    (domainPattern === undefined || facts.domains.some((domain) => globMatch(domainPattern, domain))) &&
    (m.payload === undefined ||
      Object.entries(m.payload).every(([key, condition]) =>
        conditionHolds(condition, ownValue(payload, key)),
      )) &&
    identityMatches(m, identity)
  );
};

/** A custom rule ready to evaluate: its compiled expression (or why it has none). */
interface PreparedRule {
  rule: CustomRule;
  /** Whether the rule has any matcher (without one, customRuleMatches holds trivially). */
  hasMatchers: boolean;
  /** The compiled expression; null without one or when it does not compile. */
  program: CelProgram | null;
  /** Why the expression does not compile (impossible for a parsed config; fails closed). */
  compileError: string | null;
}

/** A configuration's custom rules, prepared once (see {@link preparedRules}). */
interface PreparedRules {
  rules: readonly PreparedRule[];
  /** Whether any expression reads `action.payload` (only then is the payload converted to CEL). */
  readsPayload: boolean;
  /** The root CEL variables any expression reads (only these are built per decision). */
  variables: ReadonlySet<string>;
}

/** Prepared rules by the custom_rules array of a parsed configuration (one per policy version). */
const prepared = new WeakMap<readonly CustomRule[], PreparedRules>();

/**
 * The custom rules of a configuration with their expressions compiled: once per configuration
 * object, so per policy version (the service keeps one merged configuration per version, see
 * service/orgs chainConfigOf), not per decision or per rule.
 */
const preparedRules = (rules: readonly CustomRule[]): PreparedRules => {
  let hit = prepared.get(rules);
  if (hit === undefined) {
    let readsPayload = false;
    const variables = new Set<string>();
    const list = rules.map((rule): PreparedRule => {
      const hasMatchers = Object.keys(rule.match).length > 0;
      if (rule.expression === undefined) return { rule, hasMatchers, program: null, compileError: null };
      const compiled = compileExpression(rule.expression);
      if (!compiled.ok) {
        return {
          rule,
          hasMatchers,
          program: null,
          compileError: `does not compile: ${compiled.error.message}`,
        };
      }
      readsPayload ||= compiled.program.readsPayload;
      for (const v of compiled.program.variables) variables.add(v);
      return { rule, hasMatchers, program: compiled.program, compileError: null };
    });
    hit = { rules: list, readsPayload, variables };
    prepared.set(rules, hit);
  }
  return hit;
};

/** The CEL variables of one evaluation (built once, on the first expression, for every rule). */
const bindingsOf = (ctx: RuleContext, { readsPayload, variables }: PreparedRules): Record<string, unknown> =>
  celBindings(
    {
      action: ctx.action,
      destinationDomains: ctx.facts.domains,
      identity: ctx.identity,
      chain: ctx.chain,
      environment: ctx.org.environment,
      nowMs: ctx.nowMs,
    },
    { withPayload: readsPayload, variables },
  );

const customRuleTriggers = (ctx: RuleContext): Trigger[] => {
  const { config, action, facts, identity } = ctx;
  const rules = preparedRules(config.custom_rules);
  let bindings: Record<string, unknown> | undefined;
  const triggers: Trigger[] = [];
  for (const { rule, hasMatchers, program, compileError } of rules.rules) {
    // The matchers first: they are cheap, and a rule whose matchers fail needs no expression.
    if (hasMatchers && !customRuleMatches(rule, action, facts, identity)) continue;
    // Whether the expression holds: true without one; else the CEL result, or the error text
    // when it cannot be evaluated (fail closed).
    let holds: boolean | string = true;
    if (compileError !== null) holds = compileError;
    else if (program !== null) {
      bindings ??= bindingsOf(ctx, rules);
      const result = evaluateExpression(program, bindings);
      holds = result.ok ? result.value : result.error;
    }
    if (holds === false) continue;
    triggers.push(
      holds === true
        ? {
            kind: TriggerKind.custom_rule,
            outcome: rule.outcome,
            reason: rule.reason || `Matched custom rule ${rule.name}`,
            policy_name: rule.name,
            remediation: rule.remediation ?? null,
            docs_url: rule.docs_url ?? null,
          }
        : {
            kind: TriggerKind.custom_rule,
            outcome: config.expression_error_outcome,
            reason: `Custom rule ${rule.name}: the CEL expression could not be evaluated, so the rule fails closed (${config.expression_error_outcome}): ${holds}`,
            policy_name: rule.name,
            remediation: `Fix the expression of custom rule ${rule.name} (docs/policy-cel.md), or guard the value it reads (e.g. has(...), identity != null)`,
            docs_url: rule.docs_url ?? null,
          },
    );
  }
  return triggers;
};

/**
 * The identity_agent_names entry that applies to an identity: the exact `<ns>/<name>` entry if
 * there is one, else `<ns>/*`, else undefined.
 */
export const pinnedAgentNames = (
  config: PolicyConfig,
  identity: WorkloadIdentity,
): { pattern: string; names: readonly string[] } | undefined => {
  const pins = config.identity_agent_names;
  for (const pattern of [serviceAccountOf(identity), `${identity.namespace}/*`]) {
    if (Object.hasOwn(pins, pattern)) {
      const names = pins[pattern];
      if (names !== undefined) return { pattern, names };
    }
  }
  return undefined;
};

const identityPin: Rule = ({ config, action, identity }) => {
  if (identity === null) return null;
  const pin = pinnedAgentNames(config, identity);
  if (pin === undefined || pin.names.some((p) => globMatch(p, action.agent_name))) return null;
  return trigger(
    TriggerKind.identity_agent_names,
    Outcome.deny,
    `Workload identity ${serviceAccountOf(identity)} (${identity.spiffe_id}) may act only as agent ${pin.names.join(", ")} (identity_agent_names["${pin.pattern}"]); the action names agent ${action.agent_name}`,
    `Record the action under an agent name pinned to this service account, or extend identity_agent_names["${pin.pattern}"]`,
  );
};

// ---------------------------------------------------------------------------------------------
// Built-in rules (spec: "Limits")
// ---------------------------------------------------------------------------------------------

/** |amount| of a financial action (amounts are compared by magnitude), or null. */
const magnitude = (facts: ActionFacts): number | null =>
  facts.amount_usd === null ? null : Math.abs(facts.amount_usd);

const financialDeny: Rule = ({ config, facts }) => {
  const amount = magnitude(facts);
  const limit = config.financial_deny_threshold_usd;
  return amount !== null && limit !== null && amount > limit
    ? trigger(
        TriggerKind.financial_deny_threshold,
        Outcome.deny,
        `Amount ${usd(amount)} is above the deny threshold of ${usd(limit)}`,
        "Split the transaction or raise financial_deny_threshold_usd",
      )
    : null;
};

const financialApproval: Rule = ({ config, facts }) => {
  const amount = magnitude(facts);
  const limit = config.financial_approval_threshold_usd;
  return amount !== null && amount > limit
    ? trigger(
        TriggerKind.financial_approval_threshold,
        Outcome.require_approval,
        `Amount ${usd(amount)} is above the approval threshold of ${usd(limit)}`,
        "Ask an approver, or raise financial_approval_threshold_usd",
      )
    : null;
};

const cumulativeFinancial: Rule = ({ config, chain, facts }) => {
  if (!facts.is_financial) return null;
  const before = chain.financial_exposure_usd;
  const after = before + (magnitude(facts) ?? 0);
  const limit = config.cumulative_financial_threshold_usd;
  return Math.max(before, after) > limit
    ? trigger(
        TriggerKind.cumulative_financial_threshold,
        Outcome.require_approval,
        `Chain financial exposure would reach ${usd(after)}, above the cumulative threshold of ${usd(limit)}`,
        "Ask an approver, or raise cumulative_financial_threshold_usd",
      )
    : null;
};

const unapprovedExternal = (facts: ActionFacts): boolean => facts.is_external && !facts.allowlisted;

const isFirstExternal = ({ config, chain, action, facts }: RuleContext): boolean =>
  config.first_external_communication_requires_approval &&
  unapprovedExternal(facts) &&
  !chain.agents_with_external_communication.includes(action.agent_name);

const firstExternal: Rule = (ctx) =>
  isFirstExternal(ctx)
    ? trigger(
        TriggerKind.first_external_communication,
        Outcome.require_approval,
        `First external communication by agent ${ctx.action.agent_name} in this chain (to ${ctx.facts.destination_domain})`,
        "Ask an approver, or add the domain to external_domains_allowlist",
      )
    : null;

const exfiltrationAlert: Rule = (ctx) =>
  unapprovedExternal(ctx.facts) && !isFirstExternal(ctx)
    ? trigger(
        TriggerKind.exfiltration_alert,
        Outcome.allow_with_flag,
        `External communication to ${ctx.facts.external_domains.join(", ")}, not on external_domains_allowlist (exfiltration alert)`,
        "Add the domain to external_domains_allowlist if it is trusted",
      )
    : null;

const bulkDeletion: Rule = ({ config, facts }) =>
  facts.is_deletion && facts.record_count !== null && facts.record_count >= config.bulk_deletion_threshold
    ? trigger(
        TriggerKind.bulk_deletion,
        Outcome.require_approval,
        `Bulk deletion of ${facts.record_count} records (threshold ${config.bulk_deletion_threshold})`,
        "Ask an approver, delete in smaller batches, or raise bulk_deletion_threshold",
      )
    : null;

const bulkOperation: Rule = ({ config, facts }) =>
  facts.record_count !== null && facts.record_count >= config.bulk_operation_threshold
    ? trigger(
        TriggerKind.bulk_operation,
        Outcome.require_approval,
        `Bulk operation touching ${facts.record_count} records (threshold ${config.bulk_operation_threshold})`,
        "Ask an approver, work in smaller batches, or raise bulk_operation_threshold",
      )
    : null;

const irreversible: Rule = ({ action, facts }) =>
  facts.is_irreversible
    ? trigger(
        TriggerKind.irreversible_action,
        Outcome.require_approval,
        `Action ${action.action_name} is irreversible`,
        "Ask an approver; irreversible actions always need a human",
      )
    : null;

const highRiskAgent: Rule = ({ config, action }) =>
  config.high_risk_agents.some((pattern) => globMatch(pattern, action.agent_name))
    ? trigger(
        TriggerKind.high_risk_agent,
        Outcome.require_approval,
        `Agent ${action.agent_name} is a high-risk agent; every action needs approval`,
        "Ask an approver, or remove the agent from high_risk_agents",
      )
    : null;

/**
 * Why the action is outside the agent's declared scope, or null when inside (or no scope
 * declared). A scope with identities / service_accounts admits only callers whose verified
 * identity matches them ({@link identityMatches}); that is checked first.
 */
export const scopeViolation = (
  config: PolicyConfig,
  action: Action,
  facts: ActionFacts,
  identity: WorkloadIdentity | null = null,
): string | null => {
  if (!Object.hasOwn(config.agent_scopes, action.agent_name)) return null;
  const scope = config.agent_scopes[action.agent_name];
  if (scope === undefined) return null;
  if (!identityMatches(scope, identity)) {
    return identity === null
      ? "a caller without a verified workload identity"
      : `workload identity ${serviceAccountOf(identity)} (${identity.spiffe_id})`;
  }
  const inList = (list: readonly string[] | undefined, value: string): boolean =>
    list === undefined || list.some((pattern) => globMatch(pattern, value));
  if (!inList(scope.action_types, action.action_type)) return `action type ${action.action_type}`;
  if (!inList(scope.action_names, action.action_name)) return `action ${action.action_name}`;
  const domains = scope.domains;
  const outside =
    domains === undefined ? [] : facts.domains.filter((domain) => !domainInList(domain, domains));
  return outside.length > 0 ? `domain ${outside.join(", ")}` : null;
};

const agentScope: Rule = ({ config, action, facts, identity }) => {
  const violation = scopeViolation(config, action, facts, identity);
  return violation === null
    ? null
    : trigger(
        TriggerKind.agent_scope,
        Outcome.require_approval,
        `${violation} is outside the declared scope of agent ${action.agent_name}`,
        `Ask an approver, or extend agent_scopes.${action.agent_name}`,
      );
};

const piiToExternal: Rule = ({ config, facts }) =>
  config.pii_to_external_requires_approval && facts.pii_detected && unapprovedExternal(facts)
    ? trigger(
        TriggerKind.pii_to_external,
        Outcome.require_approval,
        `Payload contains PII (${facts.pii_kinds.join(", ")}) sent to external domain ${facts.destination_domain}`,
        "Ask an approver, remove the personal data, or add the domain to external_domains_allowlist",
      )
    : null;

/** The built-in rules of step 2, in collection order. */
export const BUILTIN_RULES: readonly Rule[] = [
  financialDeny,
  financialApproval,
  cumulativeFinancial,
  firstExternal,
  exfiltrationAlert,
  bulkDeletion,
  bulkOperation,
  irreversible,
  highRiskAgent,
  agentScope,
  piiToExternal,
];

/** Appends to `into` the trigger of every rule that fires, in order (a loop: it runs per action). */
const runRules = (rules: readonly Rule[], ctx: RuleContext, into: Trigger[] = []): Trigger[] => {
  for (const rule of rules) {
    const t = rule(ctx);
    if (t !== null) into.push(t);
  }
  return into;
};

/** The first most severe trigger, or null for an empty list. */
export const mostSevere = (triggers: readonly Trigger[]): Trigger | null =>
  triggers.reduce<Trigger | null>(
    (best, t) => (best === null || SEVERITY[t.outcome] > SEVERITY[best.outcome] ? t : best),
    null,
  );

/** Whether `exception` is active at `nowMs` and its scope is exactly `scope`. */
export const exceptionCovers = (exception: ActiveException, scope: ExceptionScope, nowMs: number): boolean =>
  exception.expires_at_ms > nowMs &&
  exception.agent_name === scope.agent_name &&
  exception.action_type === scope.action_type &&
  (exception.destination_domain?.toLowerCase() ?? null) === scope.destination_domain;

const withDocs = (t: Trigger, docsBaseUrl: string | undefined): Trigger =>
  t.docs_url !== null || docsBaseUrl === undefined || t.kind === TriggerKind.custom_rule
    ? t
    : { ...t, docs_url: `${docsBaseUrl}#${t.kind}` };

/**
 * Evaluates one action (see "Decision order" at the top of this file). Returns the
 * PolicyDecision plus the facts, category, every matched trigger, the exception used (if any),
 * the scope an exception for this action would have, and the metrics this action adds. Never
 * throws for any JSON payload; expects `config` to be a parsed PolicyConfig.
 */
export const evaluate = (input: EvaluationInput): Evaluation => {
  const { config, org, chain, action, exceptions, nowMs, docsBaseUrl } = input;
  const facts = extractFacts(action, config);
  const identity = input.identity ?? null;
  const ctx: RuleContext = { config, chain, org, action, facts, identity, nowMs };
  const mode: EvaluationMode = config.evaluation_mode;

  const docs = (triggers: Trigger[]) =>
    docsBaseUrl === undefined ? triggers : triggers.map((t) => withDocs(t, docsBaseUrl));
  const gates = docs(runRules(GATES, ctx));
  const pin = identityPin(ctx);
  const custom = customRuleTriggers(ctx);
  if (pin !== null) custom.unshift(pin);
  const policyTriggers = docs(runRules(BUILTIN_RULES, ctx, custom));
  const exception_scope: ExceptionScope = {
    agent_name: action.agent_name,
    action_type: action.action_type,
    destination_domain: facts.destination_domain,
  };

  const gate = gates[0] ?? null;
  const top = gate ?? mostSevere(policyTriggers);
  let outcome: Outcome = top?.outcome ?? Outcome.allow;
  let reason = top?.reason ?? "";
  let exception_id: string | null = null;

  if (gate === null && outcome === Outcome.require_approval) {
    const exception = exceptions.find((e) => exceptionCovers(e, exception_scope, nowMs));
    if (exception !== undefined) {
      outcome = Outcome.allow_with_flag;
      exception_id = exception.exception_id;
      const until = Number.isFinite(exception.expires_at_ms)
        ? ` until ${new Date(exception.expires_at_ms).toISOString()}`
        : "";
      reason = `Allowed by time-boxed exception ${exception.exception_id}${until}; would require approval: ${reason}`;
    }
  }

  const shadow = mode === "shadow";
  let policy_decision: Outcome = outcome;
  if (shadow && gate === null && outcome !== Outcome.allow) {
    policy_decision = Outcome.allow_with_flag;
    reason = `Shadow mode, not enforced (would be ${outcome}): ${reason}`;
  }

  const decision: PolicyDecision = {
    policy_decision,
    decision_reason: reason,
    decision_source: "backend_evaluation",
    policy_name: top?.policy_name ?? null,
    kill_switch_active: org.kill_switch.active,
    pause_reason: org.pause.active ? org.pause.reason || "The organization is paused" : null,
    remediation: top?.remediation ?? null,
    docs_url: top?.docs_url ?? null,
    evaluation_mode: mode,
    shadow_decision: shadow ? outcome : null,
    estimated_cost_usd: facts.estimated_cost_usd,
    auto_paused: gate?.kind === TriggerKind.runaway_limits,
  };

  return {
    decision,
    facts,
    category: facts.category,
    triggers: [...gates, ...policyTriggers],
    exception_id,
    exception_scope,
    metrics_delta: {
      financial_exposure_usd: facts.is_financial ? (magnitude(facts) ?? 0) : 0,
      external_communications: facts.is_external ? 1 : 0,
      records_modified: facts.record_count ?? 0,
      domains: facts.external_domains,
      estimated_cost_usd: facts.estimated_cost_usd ?? 0,
      tokens: facts.tokens,
    },
  };
};
