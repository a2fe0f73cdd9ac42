/**
 * init() and ChainConfig (spec: "Client library operations" → init). Every parameter of the
 * spec's table, camelCased, with its default; validated with zod at the boundary (errors name
 * the field). `init` stores the configuration process-wide; `createConfig` returns one without
 * storing it so that several configurations can live in one process (tests, the sidecar).
 */
import { inspect } from "node:util";
import { z } from "zod";
import { issueText } from "../contract/v1/issues.js";
import { ActionCategory } from "../policy/schema.js";
import { realSleep } from "./sleep.js";

/** Behaviour when the backend is unreachable: raise BackendUnavailableError, or allow flagged. */
export const FailMode = { deny: "deny", allow: "allow" } as const;
export type FailMode = (typeof FailMode)[keyof typeof FailMode];

/**
 * The service defaults of fail_modes (spec: "service defaults"; the values are ours): fail
 * closed for the categories that move money, send data out or cannot be undone, fail open for
 * the rest. Keys are the action categories of the policy engine plus `default`.
 */
export const DEFAULT_FAIL_MODES: Readonly<Record<ActionCategory, FailMode>> = Object.freeze({
  financial: "deny",
  external_communication: "deny",
  bulk_deletion: "deny",
  bulk_operation: "deny",
  irreversible: "deny",
  llm_call: "allow",
  default: "allow",
});

/** The default backend address: the local development service (spec: "port 8000"). */
export const DEFAULT_BACKEND_URL = "http://localhost:8000";
/** The approval-status poll interval (spec: "every 5 seconds, constant"). */
export const DEFAULT_POLL_INTERVAL_MS = 5000;

const failModeSchema = z.enum(["deny", "allow"]);
const categories = Object.keys(ActionCategory) as [ActionCategory, ...ActionCategory[]];
const patternList = z.array(z.string().min(1, "must not be empty")).nullable();

/** Options of init (spec: init table), camelCased. Every field is optional. */
export const InitOptionsSchema = z
  .object({
    environment: z.string().min(1).max(63).default("production"),
    backendUrl: z
      .string()
      .url()
      .refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL")
      .default(DEFAULT_BACKEND_URL),
    backendTimeoutSeconds: z.number().positive().max(600).default(5.0),
    failModes: z.partialRecord(z.enum(categories), failModeSchema).nullable().optional(),
    failMode: failModeSchema.nullable().optional(),
    financialApprovalThresholdUsd: z.number().nonnegative().optional(),
    cumulativeFinancialThresholdUsd: z.number().nonnegative().optional(),
    externalDomainsAllowlist: z.array(z.string().min(1)).nullable().optional(),
    highRiskAgents: z.array(z.string().min(1)).nullable().optional(),
    defaultApprovalTimeoutHours: z.number().positive().max(8760).default(24),
    fallbackApprovers: z.array(z.email()).nullable().optional(),
    sensitiveFieldPatterns: patternList.optional(),
    sensitiveValuePatterns: patternList.optional(),
    maxPayloadStringLength: z.number().int().positive().default(1000),
    enableLocalFastPath: z.boolean().optional(),
    offlineBufferMaxEvents: z.number().int().nonnegative().optional(),
  })
  .strict();
/** What init accepts. */
export type InitOptions = z.input<typeof InitOptionsSchema>;

/**
 * Test and embedding hooks (not part of the spec): the poll interval, the sleep used between
 * polls, the clock of the local wait window, and the fetch implementation.
 */
export interface SdkInternals {
  /** Approval-status poll interval in ms; default 5000. */
  pollIntervalMs: number;
  /**
   * Ask the service to hold each approval-status poll until the approval is decided or the
   * interval ends (`?wait=`, beyond the spec): still one request per interval, but the caller
   * resumes as soon as the decision is made. Default true, except with an injected `sleep`
   * (virtual time: the service would hold in real time).
   */
  longPoll: boolean;
  /** Waits `ms` milliseconds; rejects with `signal.reason` when the signal aborts. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Current time in epoch ms, for the local approval wait window. */
  now: () => number;
  /** The fetch implementation; default the global fetch. */
  fetch: typeof fetch;
}

/**
 * The bearer secret the client sends: an API key (`tg_...`), or a function that returns the current
 * one on each request (a projected service account token the kubelet rotates).
 */
export type Credential = string | (() => string);

/** The policy settings of init that go into every chain's policy_config (wire keys). */
export interface InitPolicySettings {
  financial_approval_threshold_usd?: number;
  cumulative_financial_threshold_usd?: number;
  external_domains_allowlist?: string[];
  high_risk_agents?: string[];
}

/**
 * A validated client configuration (the return value of init). Read-only. The API key is held
 * in a private field: it is not enumerable, not in JSON.stringify and not in console.log.
 */
export class ChainConfig {
  readonly #apiKey: Credential;
  /** Tag on every chain; default "production". */
  readonly environment: string;
  /** Service base URL without a trailing slash; default http://localhost:8000. */
  readonly backendUrl: string;
  /** Per-request timeout in seconds; default 5.0. */
  readonly backendTimeoutSeconds: number;
  /** fail_modes as given (null when not given); see {@link failModeFor} for the effective value. */
  readonly failModes: Readonly<Partial<Record<ActionCategory, FailMode>>> | null;
  /** The legacy fail_mode as given, or null. */
  readonly failMode: FailMode | null;
  /** USD; default 5000. Sent in policy_config only when given to init. */
  readonly financialApprovalThresholdUsd: number;
  /** USD; default 10000. Sent in policy_config only when given to init. */
  readonly cumulativeFinancialThresholdUsd: number;
  readonly externalDomainsAllowlist: readonly string[] | null;
  readonly highRiskAgents: readonly string[] | null;
  /** Local approval wait limit in hours; default 24. */
  readonly defaultApprovalTimeoutHours: number;
  /** Email addresses; informational (the organization's approver team is authoritative). */
  readonly fallbackApprovers: readonly string[] | null;
  /** Appended to the default field-name substrings. */
  readonly sensitiveFieldPatterns: readonly string[] | null;
  /** Appended to the default value prefixes. */
  readonly sensitiveValuePatterns: readonly string[] | null;
  /** Characters; default 1000. */
  readonly maxPayloadStringLength: number;
  /** Deprecated; no effect. */
  readonly enableLocalFastPath: boolean;
  /** Deprecated; no effect (no offline buffering). */
  readonly offlineBufferMaxEvents: number;
  /** The init settings sent as each chain's base policy_config (only the ones given). */
  readonly policySettings: Readonly<InitPolicySettings>;
  readonly internals: Readonly<SdkInternals>;

  /** Use {@link createConfig} or {@link init}; this constructor does not validate. */
  constructor(apiKey: Credential, o: z.output<typeof InitOptionsSchema>, internals: SdkInternals) {
    this.#apiKey = apiKey;
    this.environment = o.environment;
    this.backendUrl = o.backendUrl.replace(/\/+$/, "");
    this.backendTimeoutSeconds = o.backendTimeoutSeconds;
    this.failModes = o.failModes ? Object.freeze({ ...o.failModes }) : null;
    this.failMode = o.failMode ?? null;
    this.financialApprovalThresholdUsd = o.financialApprovalThresholdUsd ?? 5000;
    this.cumulativeFinancialThresholdUsd = o.cumulativeFinancialThresholdUsd ?? 10000;
    this.externalDomainsAllowlist = o.externalDomainsAllowlist
      ? Object.freeze([...o.externalDomainsAllowlist])
      : null;
    this.highRiskAgents = o.highRiskAgents ? Object.freeze([...o.highRiskAgents]) : null;
    this.defaultApprovalTimeoutHours = o.defaultApprovalTimeoutHours;
    this.fallbackApprovers = o.fallbackApprovers ? Object.freeze([...o.fallbackApprovers]) : null;
    this.sensitiveFieldPatterns = o.sensitiveFieldPatterns
      ? Object.freeze([...o.sensitiveFieldPatterns])
      : null;
    this.sensitiveValuePatterns = o.sensitiveValuePatterns
      ? Object.freeze([...o.sensitiveValuePatterns])
      : null;
    this.maxPayloadStringLength = o.maxPayloadStringLength;
    this.enableLocalFastPath = o.enableLocalFastPath ?? true;
    this.offlineBufferMaxEvents = o.offlineBufferMaxEvents ?? 100;
    this.policySettings = Object.freeze({
      ...(o.financialApprovalThresholdUsd !== undefined && {
        financial_approval_threshold_usd: o.financialApprovalThresholdUsd,
      }),
      ...(o.cumulativeFinancialThresholdUsd !== undefined && {
        cumulative_financial_threshold_usd: o.cumulativeFinancialThresholdUsd,
      }),
      ...(o.externalDomainsAllowlist && { external_domains_allowlist: [...o.externalDomainsAllowlist] }),
      ...(o.highRiskAgents && { high_risk_agents: [...o.highRiskAgents] }),
    });
    this.internals = Object.freeze({ ...internals });
    Object.freeze(this);
  }

  /** The service API key, or the current workload token (a secret: never log it). */
  get apiKey(): string {
    return typeof this.#apiKey === "function" ? this.#apiKey() : this.#apiKey;
  }

  /** The credential as given: the secret, or the function that returns the current one. */
  get credential(): Credential {
    return this.#apiKey;
  }

  /** Per-request timeout in ms. */
  get backendTimeoutMs(): number {
    return Math.round(this.backendTimeoutSeconds * 1000);
  }

  /**
   * The fail mode for an action category and the key that decided it. Resolution order: the
   * given fail_modes[category], the given fail_modes.default (the legacy fail_mode is exactly
   * this), the service default for the category, the service default `default`.
   */
  failModeFor(category: string): { mode: FailMode; key: string } {
    const given: Partial<Record<string, FailMode>> | null =
      this.failModes ?? (this.failMode ? { default: this.failMode } : null);
    const own = given?.[category];
    if (own) return { mode: own, key: category };
    if (given?.default) return { mode: given.default, key: "default" };
    const service = (DEFAULT_FAIL_MODES as Record<string, FailMode>)[category];
    if (service) return { mode: service, key: category };
    return { mode: DEFAULT_FAIL_MODES.default, key: "default" };
  }

  toJSON(): Record<string, unknown> {
    const { internals: _internals, ...rest } = { ...this };
    return { ...rest, apiKey: "[REDACTED]" };
  }

  [inspect.custom](): string {
    return `ChainConfig ${inspect(this.toJSON())}`;
  }
}

const DEPRECATIONS = {
  enableLocalFastPath: {
    code: "TG_DEP_ENABLE_LOCAL_FAST_PATH",
    message:
      "init(): enableLocalFastPath is deprecated and has no effect; the backend is the only authority for decisions",
  },
  offlineBufferMaxEvents: {
    code: "TG_DEP_OFFLINE_BUFFER_MAX_EVENTS",
    message:
      "init(): offlineBufferMaxEvents is deprecated and has no effect; an unreachable backend raises BackendUnavailableError where the fail mode is deny",
  },
} as const;

const formatIssues = (error: z.ZodError): string => issueText(error, { root: "(options)" });

/**
 * Validates options and returns a ChainConfig WITHOUT storing it process-wide.
 * Emits a DeprecationWarning (process.emitWarning) for each deprecated option given.
 * @param apiKey the service API key (`tg_...`), or a function returning the current bearer secret
 *   (a workload's rotated service account token, as the sidecar reads it); a secret.
 * @param options the spec's init parameters, camelCased (see {@link InitOptionsSchema}).
 * @param internals test hooks: poll interval, sleep, clock, fetch.
 * @throws TypeError naming the field when an option is invalid, when the API key is empty, or
 *   when both failModes and the legacy failMode are given.
 */
export function createConfig(
  apiKey: Credential,
  options: InitOptions = {},
  internals: Partial<SdkInternals> = {},
): ChainConfig {
  if (typeof apiKey !== "function" && (typeof apiKey !== "string" || apiKey.trim() === "")) {
    throw new TypeError("init: apiKey: must be a non-empty string");
  }
  const parsed = InitOptionsSchema.safeParse(options ?? {});
  if (!parsed.success) throw new TypeError(`init: ${formatIssues(parsed.error)}`);
  const o = parsed.data;
  if (o.failModes != null && o.failMode != null) {
    throw new TypeError("init: failMode: do not pass the legacy failMode together with failModes");
  }
  for (const key of ["enableLocalFastPath", "offlineBufferMaxEvents"] as const) {
    if (o[key] !== undefined) {
      process.emitWarning(DEPRECATIONS[key].message, {
        type: "DeprecationWarning",
        code: DEPRECATIONS[key].code,
      });
    }
  }
  const pollIntervalMs = internals.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  if (!Number.isFinite(pollIntervalMs) || pollIntervalMs < 0) {
    throw new TypeError("init: internals.pollIntervalMs: must be a non-negative number");
  }
  return new ChainConfig(apiKey, o, {
    pollIntervalMs,
    longPoll: internals.longPoll ?? internals.sleep === undefined,
    sleep: internals.sleep ?? realSleep,
    now: internals.now ?? Date.now,
    fetch: internals.fetch ?? ((input, init) => globalThis.fetch(input, init)),
  });
}

let current: ChainConfig | null = null;

/**
 * Validates options, stores the configuration process-wide and returns it (spec: init).
 * Call once at start-up before opening chains; a later call replaces the stored configuration.
 * @throws TypeError as {@link createConfig}.
 */
export function init(
  apiKey: string,
  options: InitOptions = {},
  internals: Partial<SdkInternals> = {},
): ChainConfig {
  const config = createConfig(apiKey, options, internals);
  current = config;
  return config;
}

/**
 * The process-wide configuration stored by init.
 * @throws Error when init has not been called.
 */
export function getConfig(): ChainConfig {
  if (!current) throw new Error("Tollgate SDK is not initialized: call init(apiKey, options) first");
  return current;
}

/**
 * Forgets the process-wide configuration stored by init, so that the next getConfig throws.
 * Test-only: not exported by the package entry (src/sdk/index.ts); tests import it from here.
 * @internal
 */
export function resetConfig(): void {
  current = null;
}
