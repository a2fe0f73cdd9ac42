/**
 * The governed tools/call of the modern era (MCP 2026-07-28, stateless): with no session, each
 * call opens its own chain (`mcp-call`, metadata `mcp_era`, `mcp_client` from the request's
 * `clientInfo`, `upstream`), completed as soon as the call's outcome reached the client.
 *
 * An approval wait is a Multi Round-Trip Request (docs/concepts/sidecar.md "MCP revisions"):
 * - the call's first answer, as soon as its approval is pending, is `input_required` with
 *   `requestState` (request-state.ts: names the chain's approval wait) and, when the client
 *   declared URL-mode elicitation, `inputRequests.review`: an `elicitation/create` in URL mode
 *   with the approver's review URL (information only: the answer changes nothing);
 * - a retry carrying the `requestState`, on any connection, re-attaches to the same wait
 *   (core/approvals.ts: one forward for all its callers) and is held up to `holdMs`; the
 *   approval decided, it gets the real result (or the refusal), else `input_required` again with
 *   the same `requestState` and no input request, and the client retries;
 * - at a replica that does not hold the wait (another sidecar of the pod template, or this one
 *   restarted) the retry adopts the approval (core/approvals.ts `adopt`: checked against the
 *   service's record, forwarded once there) and completes the chain through the service;
 * - a chain whose wait is gone with nobody attached (outcome delivered, dropped after the
 *   re-attach window, withdrawn) is completed by `sweep()`; `close()` leaves the waiting ones
 *   open at the service for adoption.
 *
 * When the request declared the tasks extension (modern-tasks.ts), the first answer of a call
 * whose approval is pending is a task handle instead: the call goes on waiting in this process,
 * whoever is connected, and its outcome completes the task and the chain.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { WaitUpdate } from "../../core/approval-wait.js";
import type { Governor } from "../../core/governor.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import type { JsonObject } from "../../wire/struct.js";
import type { GovernedCalls } from "./calls.js";
import type { ModernTask, ModernTasks } from "./modern-tasks.js";
import type { RequestStates } from "./request-state.js";
import { type ChainOwner, type RunningCall, type WaitReporter, waitMessage } from "./session.js";

/**
 * A modern-era tools/call result: complete, input_required (the call waits for approval), or a
 * task handle (it waits, and the client declared the tasks extension).
 */
export type ModernCallResult =
  | (CallToolResult & { resultType: "complete" })
  | { resultType: "input_required"; requestState: string; inputRequests?: Record<string, JsonObject> }
  | (ModernTask & { resultType: "task" });

/** What the client said about itself in the request's `_meta` envelope. */
export interface ModernCaller {
  /** `clientInfo` as `name/version`, or null. */
  client: string | null;
  /** The client declared URL-mode elicitation (`clientCapabilities.elicitation.url`). */
  urlElicitation: boolean;
  /** The client declared the tasks extension (`clientCapabilities.extensions`). */
  tasks: boolean;
}

/** The chain of one modern call, kept while its approval wait may be re-attached to. */
interface CallChain extends ChainOwner {
  approvalId: string | null;
  /** Requests of this call in progress (the first one and retries). */
  active: number;
}

/** Options of ModernCalls. */
export interface ModernCallOptions {
  governor: Governor;
  calls: GovernedCalls;
  states: RequestStates;
  tasks: ModernTasks;
  /** ms a retry is held while the approval is still pending (below clients' request timeouts). */
  holdMs: number;
}

/** See the module comment. */
export class ModernCalls {
  readonly #o: ModernCallOptions;
  /** Chains of calls that answered input_required, by chain id. */
  readonly #waiting = new Map<string, CallChain>();
  /** Chains whose call ended here (outcome delivered or refused), oldest first. */
  readonly #ended = new Set<string>();

  constructor(options: ModernCallOptions) {
    this.#o = options;
  }

  /**
   * One modern tools/call: a fresh call when `requestState` is undefined, else the retry of the
   * call the state names. Never rejects for a refusal (a tool error result).
   * @throws GatewayError INVALID_ARGUMENT (field requestState) when the state is not one this
   *   sidecar issued for this tool and these arguments.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    requestState: string | undefined,
    caller: ModernCaller,
    signal: AbortSignal,
  ): Promise<ModernCallResult> {
    if (requestState === undefined)
      return caller.tasks
        ? this.#asTask(tool, args, caller, signal)
        : this.#first(tool, args, caller, signal);
    const handle = this.#o.states.open(requestState, tool, args);
    const chain = this.#waiting.get(handle.chainId);
    if (chain && this.#o.governor.holdsWait(handle.chainId, handle.approvalId)) {
      // Resolved while nobody waited here: another replica may have adopted and run it.
      try {
        if (await this.#o.governor.doneElsewhere(handle.chainId, handle.approvalId)) void this.#end(chain);
      } catch (err) {
        return complete(this.#o.calls.refusalOf(err, handle.chainId)); // fail closed: no second run
      }
    }
    if (chain && this.#o.governor.holdsWait(handle.chainId, handle.approvalId)) {
      chain.active++;
      return this.#held(
        requestState,
        handle.chainId,
        (held) =>
          this.#o.calls.invoke(chain, tool, args, held, { onWait: () => undefined, done: () => undefined }),
        () => this.#end(chain),
        signal,
      ).finally(() => chain.active--);
    }
    if (chain || this.#ended.has(handle.chainId))
      return complete(
        this.#o.calls.refusalOf(
          new GatewayError(
            ErrorCode.NOT_FOUND,
            `requestState: approval ${handle.approvalId} has no wait here any more (its outcome was delivered, or dropped after the re-attach window); call again to ask anew`,
          ),
          handle.chainId,
        ),
      );
    // Issued by another replica or before a restart: the service's record decides (adopt).
    return this.#held(
      requestState,
      handle.chainId,
      (held) => this.#o.calls.adopt(handle.chainId, handle.approvalId, tool, args, held),
      () => {
        this.#remember(handle.chainId);
        return this.#o.calls.completeChain({ chainId: Promise.resolve(handle.chainId) }, null);
      },
      signal,
    );
  }

  /** Completes the chains whose wait is gone and that no request is attached to. */
  sweep(): void {
    for (const chain of this.#waiting.values()) {
      if (chain.active > 0) continue;
      if (
        chain.openedChainId &&
        chain.approvalId &&
        this.#o.governor.holdsWait(chain.openedChainId, chain.approvalId)
      )
        continue;
      void this.#end(chain);
    }
  }

  /**
   * Shutdown: forgets the chains still waiting without completing them: their approvals stay
   * pending at the service, and a retry with their requestState at any replica (or this one,
   * restarted) adopts them (approvals.ts `adopt`). A chain nobody retries stays open.
   */
  close(): void {
    this.#waiting.clear();
  }

  async #first(
    tool: string,
    args: Record<string, unknown>,
    caller: ModernCaller,
    signal: AbortSignal,
  ): Promise<ModernCallResult> {
    const chain = newChain(caller);
    const detach = new GatewayError(ErrorCode.CANCELLED, "the call answered input_required");
    const controller = linked(signal);
    let pending: WaitUpdate | null = null;
    const reporter: WaitReporter = {
      onWait: (u) => {
        if (u.status !== "pending" || pending) return;
        pending = u;
        // Detach at once (the wait goes on for a retry); not inside the wait's own listener call.
        queueMicrotask(() => controller.abort(detach));
      },
      done: () => undefined,
    };
    try {
      const result = await this.#o.calls.invoke(chain, tool, args, controller.signal, reporter);
      void this.#end(chain);
      return complete(result);
    } catch (err) {
      const u = pending as WaitUpdate | null;
      if (err === detach && u && chain.openedChainId) {
        chain.approvalId = u.approvalId;
        this.#waiting.set(chain.openedChainId, chain);
        const handle = { chainId: chain.openedChainId, approvalId: u.approvalId };
        return {
          resultType: "input_required",
          requestState: this.#o.states.issue(handle, tool, args),
          ...(caller.urlElicitation && {
            inputRequests: {
              review: reviewElicitation(
                u,
                "retry the call (same arguments, with the requestState) to get its result",
              ),
            },
          }),
        };
      }
      void this.#end(chain);
      return complete(this.#o.calls.refusalOf(err, chain.openedChainId));
    } finally {
      chain.active--;
    }
  }

  /**
   * A first call of a client that declared the tasks extension: its result when it needs no
   * approval (or is refused at once), else a task handle as soon as its approval is pending; the
   * call then goes on in this process, detached from the request, until its outcome completes the
   * task (modern-tasks.ts) and the chain, or tasks/cancel withdraws it.
   */
  async #asTask(
    tool: string,
    args: Record<string, unknown>,
    caller: ModernCaller,
    signal: AbortSignal,
  ): Promise<ModernCallResult> {
    const chain = newChain(caller);
    const running: RunningCall = { chainId: null, input: null, controller: new AbortController() };
    // Until the task exists, the client leaving withdraws nothing but ends the call as usual.
    const onGone = () => running.controller.abort(signal.reason);
    signal.addEventListener("abort", onGone, { once: true });
    let waiting!: (u: WaitUpdate) => void;
    const pending = new Promise<WaitUpdate>((resolve) => {
      waiting = resolve;
    });
    const reporter: WaitReporter = {
      onWait: (u) => u.status === "pending" && waiting(u),
      done: () => undefined,
    };
    const call = this.#o.calls.invoke(chain, tool, args, running.controller.signal, reporter, running).then(
      (result) => result,
      (err: unknown) => this.#o.calls.refusalOf(err, chain.openedChainId),
    );
    const first = await Promise.race([call.then(() => null), pending]);
    signal.removeEventListener("abort", onGone);
    if (first && !signal.aborted) {
      const review = caller.urlElicitation ? reviewElicitation(first) : null;
      // The chain is completed once the approval is withdrawn: completed first, the service would
      // close the approval as "Chain completed before a decision" instead.
      let withdrawn = Promise.resolve();
      const withdraw = () => {
        withdrawn = this.#o.calls.withdraw(running, "the MCP client cancelled the task");
        return withdrawn;
      };
      const task = await this.#o.tasks.create(first, review, withdraw).catch(async (err: unknown) => {
        await withdraw(); // no task to report its outcome: the call must not run
        throw err;
      });
      void call.then(async (result) => {
        await withdrawn;
        await this.#end(chain);
        await this.#o.tasks.settle(task.taskId, result);
      });
      chain.active--;
      return task;
    }
    const result = await call;
    chain.active--;
    void this.#end(chain);
    return complete(result);
  }

  /**
   * A retry, held up to `holdMs`: the result, a refusal, or input_required with the same state
   * when the approval is still pending. `end` (completing the chain) runs when the call's wait
   * ended, not when the client left (it may retry again); a result is answered once `end` is
   * done, so that the service shows the call done with before the client has its result (a
   * replica still holding the wait then drops it: #doneElsewhere).
   * @throws GatewayError INVALID_ARGUMENT (requestState) from `run`.
   */
  async #held(
    requestState: string,
    chainId: string,
    run: (signal: AbortSignal) => Promise<CallToolResult>,
    end: () => Promise<void>,
    signal: AbortSignal,
  ): Promise<ModernCallResult> {
    const detach = new GatewayError(ErrorCode.CANCELLED, "the retry was held long enough");
    const controller = linked(signal);
    const timer = setTimeout(() => controller.abort(detach), this.#o.holdMs);
    try {
      const result = await run(controller.signal);
      await end();
      return complete(result);
    } catch (err) {
      if (err === detach) return { resultType: "input_required", requestState };
      if (err instanceof GatewayError && err.code === ErrorCode.INVALID_ARGUMENT) throw err;
      if (!signal.aborted && !(err instanceof GatewayError && err.code === ErrorCode.NOT_FOUND)) void end();
      return complete(this.#o.calls.refusalOf(err, chainId));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets the call's chain and completes it (never rejects). */
  #end(chain: CallChain): Promise<void> {
    if (chain.openedChainId) {
      this.#waiting.delete(chain.openedChainId);
      this.#remember(chain.openedChainId);
    }
    return this.#o.calls.completeChain(chain, null);
  }

  /** Remembers a chain whose call ended here: a late retry naming it is NOT_FOUND at once. */
  #remember(chainId: string): void {
    this.#ended.add(chainId);
    if (this.#ended.size > ENDED_MEMORY) this.#ended.delete(this.#ended.values().next().value!);
  }
}

/** How many ended chains are remembered (ModernCalls #ended). */
const ENDED_MEMORY = 10_000;

const complete = (result: CallToolResult): ModernCallResult => ({ ...result, resultType: "complete" });

/** The chain of one modern call, not opened yet (opened by its first governed call). */
const newChain = (caller: ModernCaller): CallChain => ({
  chainId: null,
  openedChainId: null,
  approvalId: null,
  active: 1,
  chainInfo: () => ({ name: "mcp-call", metadata: { mcp_era: "modern", mcp_client: caller.client } }),
});

/** A controller aborted with `signal`'s reason too. */
function linked(signal: AbortSignal): AbortController {
  const controller = new AbortController();
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  return controller;
}

/** The embedded URL-mode elicitation that shows the approver's review page (2026-07-28 shape). */
function reviewElicitation(u: WaitUpdate, then = "poll tasks/get for the call's result"): JsonObject {
  return {
    method: "elicitation/create",
    params: {
      mode: "url",
      message: `${waitMessage(u)}. Once a person decided there, ${then}.`,
      url: u.reviewUrl,
    },
  };
}
