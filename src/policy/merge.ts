/**
 * Combining policy configuration layers (spec: Chain → policy_config "merged key by key over the
 * organization config; the chain value wins where set"). Pure.
 *
 * Layers, lowest first: the spec defaults, the organization's GovernancePolicy resources
 * ({@link combinePolicies}), then the chain's policy_config — each applied with
 * {@link mergePolicyConfig}.
 */
import {
  type PolicyConfig,
  type PolicyConfigOverride,
  type PolicyConfigPatch,
  PolicyConfigSchema,
} from "./schema.js";

/**
 * Keys whose value is an object merged one level deep: each of ITS top-level keys set in the
 * override replaces the base's (a runaway limit, a model's price, an agent's whole scope, one
 * of the two default prices, one service account's pinned agent names). Keys of the base object
 * that the override leaves out are kept.
 */
export const NESTED_MERGE_KEYS = [
  "runaway_limits",
  "llm_pricing",
  "agent_scopes",
  "default_llm_price",
  "identity_agent_names",
] as const;

/** List keys that {@link combinePolicies} unions across policies (first appearance order). */
export const UNION_KEYS = [
  "external_domains_allowlist",
  "internal_domains",
  "high_risk_agents",
  "irreversible_actions",
  "financial_notify",
] as const;

const nestedKeys: ReadonlySet<string> = new Set(NESTED_MERGE_KEYS);
const unionKeys: ReadonlySet<string> = new Set(UNION_KEYS);

type Loose = Record<string, unknown>;

const isObject = (value: unknown): value is Loose =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `{...base, ...patch}` without the keys of `patch` that are undefined. */
const assignDefined = (base: Loose, patch: Loose): Loose => {
  const out: Loose = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
};

/** One layer: top-level keys replace, the {@link NESTED_MERGE_KEYS} merge one level deep. */
const mergeLayer = (base: Loose, patch: Loose): Loose => {
  const out: Loose = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] =
      nestedKeys.has(key) && isObject(value) && isObject(current) ? assignDefined(current, value) : value;
  }
  return out;
};

/**
 * Applies `overrides` over `base`, in order, key by key: a key the override sets (anything but
 * undefined) wins; arrays are replaced, not concatenated (setting irreversible_actions drops the
 * default list — list the defaults to keep them). The objects runaway_limits, llm_pricing,
 * agent_scopes, default_llm_price and identity_agent_names are merged per top-level key (see
 * {@link NESTED_MERGE_KEYS}).
 *
 * Accepts {@link PolicyConfigPatch} (which every PolicyConfigOverride is). Returns a complete,
 * validated PolicyConfig; throws a ZodError when the merged result violates PolicyConfigSchema
 * (e.g. a negative threshold or an unknown key). Does not mutate its arguments.
 */
export const mergePolicyConfig = (
  base: PolicyConfig,
  ...overrides: (PolicyConfigPatch | PolicyConfigOverride)[]
): PolicyConfig => {
  const merged = overrides.reduce<Loose>((acc, override) => mergeLayer(acc, override as Loose), { ...base });
  return PolicyConfigSchema.parse(merged);
};

/** A named GovernancePolicy resource of one organization. */
export interface NamedPolicy {
  /** Resource name (for CRDs, `namespace/name` keeps it unique); decides the combination order. */
  name: string;
  config: PolicyConfigPatch | PolicyConfigOverride;
}

const union = (a: unknown, b: unknown): unknown[] => [
  ...new Set([...(Array.isArray(a) ? a : []), ...(Array.isArray(b) ? b : [])]),
];

/** One policy folded into the accumulated combination. */
const combineLayer = (acc: Loose, patch: Loose): Loose => {
  const out: Loose = { ...acc };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const current = out[key];
    if (unionKeys.has(key)) out[key] = union(current, value);
    else if (key === "custom_rules")
      out[key] = [...(Array.isArray(current) ? current : []), ...(value as unknown[])];
    else if (nestedKeys.has(key) && isObject(value) && isObject(current))
      out[key] = assignDefined(current, value);
    else out[key] = value;
  }
  return out;
};

/**
 * Combines several GovernancePolicy resources of one organization into one override.
 * Policies are applied in ascending name order (code-unit comparison, so the result does not
 * depend on list order). The lists of {@link UNION_KEYS} are unioned (deduplicated, first
 * appearance order); custom_rules are concatenated in name order; agent_scopes, llm_pricing,
 * runaway_limits, default_llm_price and identity_agent_names merge per top-level key (for
 * agent_scopes: per agent, the later name's scope wins whole; for identity_agent_names: per
 * service account pattern, the later name's list wins whole); every other key: the later name
 * wins.
 *
 * The result is a patch (only keys some policy set); apply it with {@link mergePolicyConfig}
 * over the defaults. Pure; does not validate (mergePolicyConfig does).
 */
export const combinePolicies = (policies: readonly NamedPolicy[]): PolicyConfigPatch => {
  const sorted = [...policies].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.reduce<Loose>(
    (acc, policy) => combineLayer(acc, policy.config as Loose),
    {},
  ) as PolicyConfigPatch;
};
