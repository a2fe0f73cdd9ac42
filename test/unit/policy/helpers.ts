/** Builders for policy engine tests: every field has a neutral default that triggers nothing. */
import { type Evaluation, type EvaluationInput, evaluate } from "../../../src/policy/engine.js";
import { mergePolicyConfig } from "../../../src/policy/merge.js";
import {
  type Action,
  type ActiveException,
  type ChainState,
  type OrgState,
  type PolicyConfig,
  type PolicyConfigPatch,
  PolicyConfigSchema,
  spiffeIdOf,
  type WorkloadIdentity,
} from "../../../src/policy/schema.js";

export const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

export const config = (patch: PolicyConfigPatch = {}): PolicyConfig =>
  mergePolicyConfig(PolicyConfigSchema.parse({}), patch);

export const action = (overrides: Partial<Action> = {}): Action => ({
  agent_name: "agent-a",
  action_type: "tool_call",
  action_name: "lookup",
  payload: {},
  ...overrides,
});

export const org = (overrides: Partial<OrgState> = {}): OrgState => ({
  kill_switch: { active: false, reason: null },
  pause: { active: false, reason: null },
  ...overrides,
});

export const chain = (overrides: Partial<ChainState> = {}): ChainState => ({
  started_at_ms: NOW - 60_000,
  event_count: 0,
  total_tokens: 0,
  financial_exposure_usd: 0,
  agents_with_external_communication: [],
  ...overrides,
});

export const exception = (overrides: Partial<ActiveException> = {}): ActiveException => ({
  exception_id: "exc-1",
  agent_name: "agent-a",
  action_type: "tool_call",
  destination_domain: null,
  expires_at_ms: NOW + 3_600_000,
  ...overrides,
});

/** A verified workload identity in trust domain cluster.local. */
export const identity = (namespace = "payments", serviceAccount = "invoice-agent"): WorkloadIdentity => ({
  namespace,
  service_account: serviceAccount,
  pod_name: `${serviceAccount}-7d9f-abcde`,
  pod_uid: "8c1f3f2e-0000-4000-8000-000000000001",
  spiffe_id: spiffeIdOf("cluster.local", namespace, serviceAccount),
});

export interface Scenario {
  config?: PolicyConfigPatch;
  org?: Partial<OrgState>;
  chain?: Partial<ChainState>;
  action?: Partial<Action>;
  payload?: Record<string, unknown>;
  exceptions?: ActiveException[];
  nowMs?: number;
  docsBaseUrl?: string;
  identity?: WorkloadIdentity | null;
}

export const input = (s: Scenario = {}): EvaluationInput => ({
  config: config(s.config),
  org: org(s.org),
  chain: chain(s.chain),
  action: action({ ...s.action, ...(s.payload ? { payload: s.payload } : {}) }),
  exceptions: s.exceptions ?? [],
  nowMs: s.nowMs ?? NOW,
  ...(s.docsBaseUrl !== undefined ? { docsBaseUrl: s.docsBaseUrl } : {}),
  ...(s.identity !== undefined ? { identity: s.identity } : {}),
});

export const run = (s: Scenario = {}): Evaluation => evaluate(input(s));
