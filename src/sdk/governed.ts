/**
 * The shared part of the langgraph and langchain adapters: run a LangChain-style runnable (an
 * object with `invoke(input, config)` and optionally `stream(input, config)` that accepts
 * `callbacks` in its config) inside a Chain, with the governance callback handler attached.
 *
 * Each invoke/stream opens a new chain named `chainName` and completes it afterwards (marked
 * failed when the run throws), unless `options.chain` passes an already-entered chain, which
 * is then used and left open.
 */
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import type { RunnableConfig } from "@langchain/core/runnables";
import { GovernanceCallbackHandler, type GovernanceMode } from "./callbacks.js";
import { Chain, type PolicyConfigInput } from "./chain.js";
import type { ChainConfig } from "./config.js";

/** Options of govern(). */
export interface GovernOptions {
  /** Name of the chain each run opens; the adapter's default when omitted. */
  chainName?: string;
  /** Chain metadata (visible in receipts). */
  metadata?: Record<string, unknown>;
  /** Per-chain policy override (wire keys). */
  policyConfig?: PolicyConfigInput;
  /** Configuration; default the one stored by init(). */
  config?: ChainConfig;
}

/** Per-run options: the runnable's own config plus an optional entered chain to record into. */
export type GovernedRunOptions = Partial<RunnableConfig> & {
  /** Record into this entered chain instead of opening (and completing) a new one. */
  chain?: Chain;
  [key: string]: unknown;
};

/** What the adapters wrap: anything with LangChain's invoke (and optionally stream). */
export interface RunnableLike<I, O> {
  invoke(input: I, options?: Partial<RunnableConfig>): Promise<O>;
  stream?(input: I, options?: Partial<RunnableConfig>): Promise<AsyncIterable<unknown>>;
}

/** `callbacks` of a RunnableConfig with `handler` added (never mutates the caller's). */
const withHandler = (
  callbacks: RunnableConfig["callbacks"],
  handler: BaseCallbackHandler,
): RunnableConfig["callbacks"] => {
  if (!callbacks) return [handler];
  if (Array.isArray(callbacks)) return [...callbacks, handler];
  if (callbacks instanceof CallbackManager) {
    const copy = callbacks.copy();
    copy.addHandler(handler, true);
    return copy;
  }
  return [handler];
};

/** Base of GovernedGraph and GovernedChain. */
export class GovernedRunnable<I, O> {
  readonly runnable: RunnableLike<I, O>;
  readonly chainName: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly #opts: GovernOptions;
  readonly #mode: GovernanceMode;
  readonly #agentName: string | undefined;
  /** The chain of the most recent run (opened or passed in); null before the first run. */
  lastChain: Chain | null = null;
  /** The handler of the most recent run (its `recorded` actions). */
  lastHandler: GovernanceCallbackHandler | null = null;

  constructor(
    runnable: RunnableLike<I, O>,
    mode: GovernanceMode,
    defaultChainName: string,
    opts: GovernOptions,
    agentName?: string,
  ) {
    if (!runnable || typeof runnable.invoke !== "function") {
      throw new TypeError("govern: the wrapped object must have an invoke(input, config) method");
    }
    this.runnable = runnable;
    this.chainName = opts.chainName ?? defaultChainName;
    this.metadata = Object.freeze({ ...(opts.metadata ?? {}) });
    this.#opts = opts;
    this.#mode = mode;
    this.#agentName = agentName;
  }

  /** Opens (or adopts) the chain and builds the run config with the handler. */
  async #begin(options: GovernedRunOptions | undefined) {
    const { chain: given, ...config } = options ?? {};
    if (given && given.chainId === null) throw new TypeError("options.chain: must be an entered Chain");
    const chain =
      given ??
      (await new Chain(this.chainName, {
        metadata: { ...this.metadata },
        policyConfig: this.#opts.policyConfig,
        config: this.#opts.config,
      }).enter());
    const handler = new GovernanceCallbackHandler({
      chain,
      mode: this.#mode,
      agentName: this.#agentName,
      signal: config.signal,
    });
    this.lastChain = chain;
    this.lastHandler = handler;
    const runConfig: Partial<RunnableConfig> = {
      ...config,
      callbacks: withHandler(config.callbacks, handler),
    };
    return { chain, own: !given, runConfig };
  }

  /**
   * Runs the wrapped object inside a chain and returns its result.
   * @throws the run's error (ActionDeniedError, ServiceKillSwitchError, ChainAutoPausedError,
   *   ChainTimeoutError, BackendUnavailableError from the governance handler, or the
   *   framework's own); BackendUnavailableError / ServiceApiError when the chain cannot be
   *   opened or completed.
   */
  async invoke(input: I, options?: GovernedRunOptions): Promise<O> {
    const { chain, own, runConfig } = await this.#begin(options);
    let result: O;
    try {
      result = await this.runnable.invoke(input, runConfig);
    } catch (err) {
      if (own) await chain.exit(err).catch(() => undefined);
      throw err;
    }
    if (own) await chain.exit();
    return result;
  }

  /**
   * Streams the wrapped object's output inside a chain; the chain is completed when the
   * stream ends (also when the consumer stops early) and marked failed when it throws.
   * @throws TypeError when the wrapped object has no stream method; otherwise as invoke.
   */
  async *stream(input: I, options?: GovernedRunOptions): AsyncGenerator<unknown, void, undefined> {
    const stream = this.runnable.stream?.bind(this.runnable);
    if (!stream) throw new TypeError("govern: the wrapped object has no stream(input, config) method");
    const { chain, own, runConfig } = await this.#begin(options);
    let failed = false;
    try {
      for await (const chunk of await stream(input, runConfig)) yield chunk;
    } catch (err) {
      failed = true;
      if (own) await chain.exit(err).catch(() => undefined);
      throw err;
    } finally {
      if (own && !failed) await chain.exit();
    }
  }
}
