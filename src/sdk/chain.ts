/**
 * Chain: a governed chain of agent actions (spec: "Chain(name, metadata=None,
 * policy_config=None)", "States and transitions"). Entering creates the chain on the backend
 * (chainId set); recordAgentAction records one action and returns the backend's decision,
 * blocking on require_approval; leaving completes the chain (receipt issued), marked with the
 * failure when it is left through an exception.
 *
 * Usage:
 * - `await withChain(name, opts, async (chain) => { ... })` — completes the chain as failed
 *   when the callback throws;
 * - `await using chain = await new Chain(name, opts).enter();` — Symbol.asyncDispose completes
 *   it normally (dispose cannot see the exception; call `await chain.exit(err)` in a catch to
 *   mark a failure, after which dispose does nothing).
 */
import { z } from "zod";
import { ApiErrorCode } from "../contract/v1/errors.js";
import { issueText } from "../contract/v1/issues.js";
import { MAX_BODY_BYTES } from "../contract/v1/limits.js";
import { extractFacts } from "../policy/facts.js";
import { mergePolicyConfig } from "../policy/merge.js";
import { cutText, redactText, sanitizePayload } from "../policy/sanitize.js";
import {
  type Action,
  defaultPolicyConfig,
  type PolicyConfig,
  type PolicyConfigPatch,
  PolicyConfigPatchSchema,
} from "../policy/schema.js";
import { type Receipt, ServiceClient } from "./client.js";
import { type ChainConfig, getConfig } from "./config.js";
import { failModeAllowDecision, type PolicyDecision } from "./decision.js";
import {
  ActionDeniedError,
  type ArgumentIssue,
  BackendUnavailableError,
  ChainAutoPausedError,
  InvalidArgumentError,
  PolicyViolationError,
  ServiceApiError,
  ServiceKillSwitchError,
} from "./exceptions.js";
import { sanitizeForConfig } from "./sanitize.js";
import { throwIfAborted } from "./sleep.js";
import { waitForApproval } from "./wait.js";

/** A per-chain policy override as callers write it (wire keys; defaults of nested items optional). */
export type PolicyConfigInput = z.input<typeof PolicyConfigPatchSchema>;

/** Options of a Chain. */
export interface ChainOptions {
  /** Arbitrary JSON key/value pairs, set once at creation, visible in receipts. Not sanitized. */
  metadata?: Record<string, unknown>;
  /**
   * Per-chain policy override (wire keys, e.g. `{ financial_approval_threshold_usd: 100 }`),
   * merged key by key over the organization config; must be set before the chain starts.
   */
  policyConfig?: PolicyConfigInput;
  /** The configuration to use; default the one stored by init(). */
  config?: ChainConfig;
}

/**
 * The action recordAgentAction records (its first argument; spec: record_agent_action's
 * parameters, camelCased like the rest of the SDK's API surface).
 */
export interface AgentAction {
  /** The agent taking the action (1–200 characters). */
  agentName: string;
  /** Category: tool_call, llm_call, state_update, ... (1–100 characters). */
  actionType: string;
  /** Name within the type, for tool_call the tool name (1–200 characters). */
  actionName: string;
  /** The action's inputs; sanitized before they leave the process. */
  payload?: Record<string, unknown> | null;
  /** The delegating agent, for hierarchical workflows. */
  parentAgentName?: string | null;
}

/** Per-call options of recordAgentAction (its second argument; also enter() and receipt()). */
export interface RecordOptions {
  /** Stops waiting (HTTP request or approval wait); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * false: a require_approval decision is returned as it is (policy_decision require_approval,
   * approval_id set) instead of blocking; the caller waits itself with `waitForApproval`
   * (wait.ts). Default true (the spec's blocking behaviour).
   */
  awaitApproval?: boolean;
}

/** What exit() returns once the chain is sealed (data: the wire's snake_case names). */
export interface CompleteResult {
  chain_id: string;
  /** completed, or failed when the chain was left through an exception. */
  status: string;
  receipt_id: string;
  /** PR-YYYY-NNNNN. */
  receipt_number: string;
}

const ChainOptionsSchema = z
  .object({
    metadata: z.record(z.string(), z.unknown()).optional(),
    policyConfig: PolicyConfigPatchSchema.optional(),
    config: z.unknown().optional(),
  })
  .strict();

const AgentActionSchema = z.strictObject({
  agentName: z.string().min(1).max(200),
  actionType: z.string().min(1).max(100),
  actionName: z.string().min(1).max(200),
  payload: z.record(z.string(), z.unknown()).nullable().optional(),
  parentAgentName: z.string().min(1).max(200).nullable().optional(),
});
const ACTION_FIELDS = Object.keys(AgentActionSchema.shape);

const RecordOptionsSchema = z.strictObject({
  signal: z.instanceof(AbortSignal).optional(),
  awaitApproval: z.boolean().optional(),
});

const issues = (error: z.ZodError): string => issueText(error);

/** snake_case → camelCase (agent_name → agentName), for the hint on an unknown key. */
const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The issues of an invalid argument `arg` of recordAgentAction, each naming the field as the
 * caller wrote it; an unknown key is one issue of its own, with the known field it resembles.
 */
function argumentIssues(arg: string, error: z.ZodError, known: readonly string[]): ArgumentIssue[] {
  return error.issues.flatMap((issue) => {
    const at = [arg, ...issue.path.map(String)].join(".");
    if (issue.code !== "unrecognized_keys") return [{ field: at, message: issue.message }];
    return issue.keys.map((key) => {
      const like = known.includes(camel(key)) ? `did you mean ${camel(key)}? ` : "";
      return { field: `${at}.${key}`, message: `unknown field (${like}fields: ${known.join(", ")})` };
    });
  });
}

type State = "new" | "entering" | "open" | "exiting" | "closed";

/** A governed chain (see the module comment). */
export class Chain {
  /** Human-readable label; convention lowercase hyphen-separated. */
  readonly name: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly config: ChainConfig;
  /** The HTTP client this chain uses. */
  readonly client: ServiceClient;
  #policyConfig: PolicyConfigPatch;
  #chainId: string | null = null;
  #state: State = "new";
  #result: CompleteResult | null = null;
  #localPolicy: PolicyConfig | null = null;

  /**
   * @throws TypeError naming the field when name, metadata or policyConfig is invalid;
   *   Error when no config is given and init() has not been called.
   */
  constructor(name: string, opts: ChainOptions = {}) {
    if (typeof name !== "string" || name.trim() === "" || name.length > 200) {
      throw new TypeError("Chain: name: must be a non-empty string of at most 200 characters");
    }
    const parsed = ChainOptionsSchema.safeParse(opts ?? {});
    if (!parsed.success) throw new TypeError(`Chain: ${issues(parsed.error)}`);
    this.name = name;
    this.metadata = Object.freeze({ ...(opts.metadata ?? {}) });
    this.config = opts.config ?? getConfig();
    this.client = ServiceClient.fromConfig(this.config);
    this.#policyConfig = { ...(parsed.data.policyConfig ?? {}) };
  }

  /** The backend-assigned id; null before enter(). */
  get chainId(): string | null {
    return this.#chainId;
  }

  /** The policy_config sent at creation: init's explicit settings, then the chain's own. */
  get policyConfig(): PolicyConfigPatch {
    return { ...this.config.policySettings, ...this.#policyConfig } as PolicyConfigPatch;
  }

  /**
   * Adds a per-chain financial threshold (spec: add_financial_threshold). With deny false, a
   * single amount above `usd` requires approval (financial_approval_threshold_usd); with deny
   * true it is denied outright (financial_deny_threshold_usd). `notify` adds recipients to the
   * financial approval emails (financial_notify). Returns the chain for chaining.
   * @param usd amount in USD, ≥ 0.
   * @throws TypeError on invalid arguments; Error when the chain has already started.
   */
  addFinancialThreshold(usd: number, notify: readonly string[] | null = null, deny = false): this {
    if (this.#state !== "new")
      throw new Error("addFinancialThreshold: the policy must be set before the chain starts");
    const parsed = z
      .object({
        usd: z.number().finite().nonnegative(),
        notify: z.array(z.email()).nullable(),
        deny: z.boolean(),
      })
      .safeParse({ usd, notify, deny });
    if (!parsed.success) throw new TypeError(`addFinancialThreshold: ${issues(parsed.error)}`);
    if (deny) this.#policyConfig.financial_deny_threshold_usd = usd;
    else this.#policyConfig.financial_approval_threshold_usd = usd;
    if (notify?.length) {
      this.#policyConfig.financial_notify = [
        ...new Set([...(this.#policyConfig.financial_notify ?? []), ...notify]),
      ];
    }
    this.#localPolicy = null;
    return this;
  }

  /**
   * Enters the chain: POST /v1/chains creates it and sets chainId. Returns the chain.
   * @throws BackendUnavailableError when the service is unreachable (a chain cannot exist
   *   without the backend); ServiceApiError (e.g. 401, 400 naming the field); Error when the
   *   chain was already entered.
   */
  async enter(opts: RecordOptions = {}): Promise<this> {
    if (this.#state !== "new") throw new Error(`Chain "${this.name}" was already entered`);
    this.#state = "entering";
    try {
      const created = await this.client.createChain(
        {
          name: this.name,
          // Metadata leaves the process like a payload: secrets redacted, strings kept whole.
          metadata: sanitizePayload(
            { ...this.metadata },
            {
              fieldPatterns: this.config.sensitiveFieldPatterns ?? [],
              valuePrefixes: this.config.sensitiveValuePatterns ?? [],
              maxStringLength: MAX_BODY_BYTES,
            },
          ).payload,
          policy_config: this.policyConfig as Record<string, unknown>,
          environment: this.config.environment,
        },
        { signal: opts.signal },
      );
      this.#chainId = created.chain_id;
      this.#state = "open";
      return this;
    } catch (err) {
      this.#state = "new";
      throw err;
    }
  }

  /**
   * Leaves the chain: POST /v1/chains/{id}/complete seals it and issues the receipt. With an
   * `error` (anything but undefined) the chain is marked failed with
   * `{mode: error's class name, message: sanitized error message}`. Idempotent: returns the
   * earlier result (or null when never entered, or completed elsewhere).
   * @throws BackendUnavailableError / ServiceApiError when completion fails (the chain stays
   *   open and exit may be retried).
   */
  async exit(error?: unknown): Promise<CompleteResult | null> {
    if (this.#state !== "open") return this.#result;
    const chainId = this.#chainId!;
    this.#state = "exiting";
    try {
      const res = await this.client.completeChain(
        chainId,
        error === undefined ? {} : { failure: this.#failure(error) },
      );
      this.#result = {
        chain_id: res.chain_id,
        status: res.status,
        receipt_id: res.receipt_id,
        receipt_number: res.receipt_number,
      };
      this.#state = "closed";
      return this.#result;
    } catch (err) {
      if (err instanceof ServiceApiError && err.code === ApiErrorCode.CHAIN_COMPLETED) {
        this.#state = "closed";
        return null;
      }
      this.#state = "open";
      throw err;
    }
  }

  /** `await using`: completes the chain normally (see the module comment). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.exit();
  }

  /**
   * Records one action and returns the backend's decision (allow or allow_with_flag, spec:
   * record_agent_action). The payload is sanitized before it leaves the process. On
   * require_approval it blocks, polling approval-status every 5 s (each poll held by the
   * service until the decision or the interval's end, see wait.ts), and returns the resumed
   * decision (decision_source human_approval) as soon as a reviewer approves.
   *
   * `await chain.recordAgentAction({ agentName: "payer", actionType: "tool_call",
   * actionName: "pay_invoice", payload: { amount_usd: 2500 } }, { signal })`
   * @param action the action (see AgentAction); unknown keys are refused.
   * @param opts `signal` stops waiting; `awaitApproval: false` returns a require_approval
   *   decision instead of blocking.
   * @throws ActionDeniedError (policy deny; reviewer deny with notes as condition; backend
   *   approval timeout, condition contains "not resolved within");
   *   ServiceKillSwitchError (kill switch active); ChainAutoPausedError (runaway limit, now or
   *   earlier); PolicyViolationError (an earlier approval of this chain is still pending);
   *   ChainTimeoutError (local wait window expired);
   *   BackendUnavailableError (backend unreachable and the category's fail mode is deny — with
   *   fail mode allow a flagged allow with event_id null is returned instead);
   *   ServiceApiError (other API errors, e.g. a completed chain);
   *   InvalidArgumentError, a TypeError (invalid arguments: the message and `issues` name each
   *   field, e.g. `recordAgentAction: action.agentName: ...`); Error when the chain is not open;
   *   the signal's reason when `opts.signal` aborts.
   */
  async recordAgentAction(action: AgentAction, opts: RecordOptions = {}): Promise<PolicyDecision> {
    const args = AgentActionSchema.safeParse(action);
    if (!args.success)
      throw new InvalidArgumentError(
        "recordAgentAction",
        argumentIssues("action", args.error, ACTION_FIELDS),
      );
    const options = RecordOptionsSchema.safeParse(opts ?? {});
    if (!options.success) {
      throw new InvalidArgumentError(
        "recordAgentAction",
        argumentIssues("options", options.error, Object.keys(RecordOptionsSchema.shape)),
      );
    }
    const { agentName, actionType, actionName, payload, parentAgentName } = args.data;
    const { signal, awaitApproval } = options.data;
    if (this.#state !== "open") {
      throw new Error(
        this.#state === "closed" || this.#state === "exiting"
          ? `Chain "${this.name}" is completed and accepts no further actions`
          : `Chain "${this.name}" is not entered: call enter() first`,
      );
    }
    throwIfAborted(signal);
    const chainId = this.#chainId!;
    const wireAction: Action = {
      agent_name: agentName,
      action_type: actionType,
      action_name: actionName,
      payload: sanitizeForConfig(payload, this.config),
      ...(parentAgentName ? { parent_agent_name: parentAgentName } : {}),
    };

    let res: Awaited<ReturnType<ServiceClient["recordAction"]>>;
    try {
      res = await this.client.recordAction(chainId, wireAction, { signal });
    } catch (err) {
      if (err instanceof BackendUnavailableError) return this.#failMode(wireAction, err);
      if (err instanceof ServiceApiError && err.code === ApiErrorCode.CHAIN_PAUSED) {
        throw new ChainAutoPausedError(chainId, "the chain was halted earlier by a runaway limit");
      }
      if (err instanceof ServiceApiError && err.code === ApiErrorCode.APPROVAL_PENDING) {
        throw new PolicyViolationError(
          `Chain "${this.name}": an earlier action is still waiting for approval`,
          err.code,
          { cause: err },
        );
      }
      throw err;
    }

    const decision: PolicyDecision = res;
    if (decision.kill_switch_active && decision.policy_decision === "deny")
      throw new ServiceKillSwitchError(decision);
    if (decision.auto_paused) throw new ChainAutoPausedError(chainId, decision.decision_reason, decision);
    if (decision.policy_decision === "deny") {
      throw new ActionDeniedError(
        decision.decision_source,
        decision.decision_reason,
        decision.policy_name,
        decision,
      );
    }
    if (decision.policy_decision === "require_approval") {
      if (!res.approval_id)
        throw new ServiceApiError(200, ApiErrorCode.BAD_RESPONSE, "require_approval without approval_id");
      if (awaitApproval === false) return decision;
      return waitForApproval(
        this.client,
        this.config,
        {
          chainId,
          approvalId: res.approval_id,
          eventId: res.event_id,
          sequence: decision.sequence ?? null,
          category: res.category,
        },
        signal,
      );
    }
    return decision;
  }

  /** The signed receipt after the chain has completed, else null (spec: chain.receipt()). */
  async receipt(opts: RecordOptions = {}): Promise<Receipt | null> {
    if (!this.#chainId) return null;
    return this.client.getReceipt(this.#chainId, { signal: opts.signal });
  }

  /** The fail-mode outcome of an action the backend could not evaluate. */
  #failMode(action: Action, cause: BackendUnavailableError): PolicyDecision {
    const category = this.#categoryOf(action);
    const { mode, key } = this.config.failModeFor(category);
    if (mode === "deny") {
      throw new BackendUnavailableError(
        `${cause.message}; fail mode deny for ${category} actions (fail_modes.${key}), the action was not recorded`,
        { category, failModeKey: key, cause },
      );
    }
    return failModeAllowDecision(category, key, cause.message);
  }

  /** The action's category as the policy engine would compute it from what the client knows. */
  #categoryOf(action: Action): string {
    if (!this.#localPolicy) {
      try {
        this.#localPolicy = mergePolicyConfig(defaultPolicyConfig(), this.policyConfig);
      } catch {
        this.#localPolicy = defaultPolicyConfig();
      }
    }
    return extractFacts(action, this.#localPolicy).category;
  }

  #failure(error: unknown): { mode: string; message: string } {
    const mode = error instanceof Error ? error.name || error.constructor.name || "Error" : typeof error;
    const raw = error instanceof Error ? error.message : String(error);
    const message = redactText(raw, {
      fieldPatterns: this.config.sensitiveFieldPatterns ?? [],
      valuePrefixes: this.config.sensitiveValuePatterns ?? [],
    });
    return { mode: cutText(mode, 200), message: cutText(message, 2000) };
  }
}

/**
 * Runs `fn` inside an entered chain and completes it: normally when `fn` resolves, marked with
 * the failure when it throws (the original error is rethrown; a completion error on that path
 * is dropped so it cannot hide it).
 * @throws whatever enter(), fn or exit() throw.
 */
export async function withChain<T>(
  name: string,
  opts: ChainOptions | ((chain: Chain) => Promise<T> | T),
  fn?: (chain: Chain) => Promise<T> | T,
): Promise<T> {
  const callback = typeof opts === "function" ? opts : fn;
  if (!callback) throw new TypeError("withChain: fn: a function is required");
  const chain = new Chain(name, typeof opts === "function" ? {} : opts);
  await chain.enter();
  let result: T;
  try {
    result = await callback(chain);
  } catch (err) {
    await chain.exit(err === undefined ? new Error("undefined was thrown") : err).catch(() => undefined);
    throw err;
  }
  await chain.exit();
  return result;
}
