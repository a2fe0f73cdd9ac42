/**
 * Pure mapping from the GovernancePolicy spec (camelCase, operator/crds/schema.ts) to the body of
 * PUT .../policies/{name} (snake_case, the contract's PolicySpecSchema in src/contract/v1/admin.ts,
 * config = PolicyConfigPatchSchema). Keys the resource leaves unset are left out of the body, so
 * a policy only overrides what it sets.
 *
 * The operator talks to the service over HTTP only: it shares the wire contract, never the
 * service's code, and the compiler catches a body that drifted from the contract.
 */
import type { GovernancePolicySpec } from "../../crds/schema.js";
import type { PolicyBody } from "../../governance/client.js";
import { put } from "../shared/mapping.js";

type PolicyConfig = PolicyBody["config"];
type PayloadCondition = NonNullable<
  NonNullable<NonNullable<PolicyConfig["custom_rules"]>[number]["match"]>["payload"]
>[string];

/** GovernancePolicy spec → PUT .../policies/{name} body (config is a patch: only keys set). */
export function policyBody(spec: GovernancePolicySpec, owner: string): PolicyBody {
  const config: PolicyConfig = {};
  const t = spec.thresholds;
  if (t) {
    put(config, "financial_approval_threshold_usd", t.financialApprovalUsd);
    put(config, "cumulative_financial_threshold_usd", t.cumulativeFinancialUsd);
    put(config, "financial_deny_threshold_usd", t.financialDenyUsd);
    put(config, "bulk_operation_threshold", t.bulkOperation);
    put(config, "bulk_deletion_threshold", t.bulkDeletion);
  }
  put(config, "financial_notify", spec.financialNotify);
  put(config, "external_domains_allowlist", spec.externalDomainsAllowlist);
  put(config, "internal_domains", spec.internalDomains);
  put(config, "high_risk_agents", spec.highRiskAgents);
  if (spec.agentScopes) {
    config.agent_scopes = Object.fromEntries(
      spec.agentScopes.map((s) => {
        const scope = {};
        put(scope, "action_types", s.actionTypes);
        put(scope, "action_names", s.actionNames);
        put(scope, "domains", s.domains);
        put(scope, "identities", s.identities);
        put(scope, "service_accounts", s.serviceAccounts);
        return [s.agentName, scope];
      }),
    );
  }
  put(
    config,
    "first_external_communication_requires_approval",
    spec.firstExternalCommunicationRequiresApproval,
  );
  put(config, "pii_to_external_requires_approval", spec.piiToExternalRequiresApproval);
  put(config, "irreversible_actions", spec.irreversibleActions);
  put(config, "expression_error_outcome", spec.expressionErrorOutcome);
  if (spec.identityAgentNames) {
    config.identity_agent_names = Object.fromEntries(
      spec.identityAgentNames.map((p) => [p.serviceAccount, p.agentNames]),
    );
  }
  if (spec.customRules) {
    config.custom_rules = spec.customRules.map((r) => {
      const match = {};
      const m = r.match ?? {};
      put(match, "agent_name", m.agentName);
      put(match, "action_type", m.actionType);
      put(match, "action_name", m.actionName);
      put(match, "destination_domain", m.destinationDomain);
      put(match, "payload", m.payload as Record<string, PayloadCondition> | undefined);
      put(match, "identities", m.identities);
      put(match, "service_accounts", m.serviceAccounts);
      const rule = { name: r.name, match, outcome: r.outcome, reason: r.reason ?? "" };
      put(rule, "expression", r.expression);
      put(rule, "remediation", r.remediation);
      put(rule, "docs_url", r.docsUrl);
      return rule;
    });
  }
  if (spec.llmPricing) {
    config.llm_pricing = Object.fromEntries(
      spec.llmPricing.map((p) => [
        p.model,
        { input_per_1k_usd: p.inputPer1kUsd, output_per_1k_usd: p.outputPer1kUsd },
      ]),
    );
  }
  if (spec.defaultLlmPrice) {
    const price = {};
    put(price, "input_per_1k_usd", spec.defaultLlmPrice.inputPer1kUsd);
    put(price, "output_per_1k_usd", spec.defaultLlmPrice.outputPer1kUsd);
    config.default_llm_price = price;
  }
  const body: PolicyBody = { config, managed_by: owner };
  put(body, "policy_version", spec.policyVersion);
  return body;
}
