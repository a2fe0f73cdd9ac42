/**
 * The governed tools/call of the MCP face: one Governor invocation (action_type tool_call,
 * action_name the tool, payload the arguments, agent_name the configured TOLLGATE_AGENT_NAME)
 * inside the chain of its ChainOwner (a legacy session, or one modern-era call), opened at its
 * first governed call and completed when the owner ends. A forwarded call's result is the upstream's CallToolResult with
 * `_meta["tollgate.dev/chain_id"]` and `_meta["tollgate.dev/event_id"]` added; a refusal is a
 * tool error result (isError) whose text is the reason, with `_meta["tollgate.dev/error_code"]`,
 * `_meta["tollgate.dev/decision"]` and, for approvals, `_meta["tollgate.dev/approval"]`.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Governor, InvokeResult } from "../../core/governor.js";
import type { Logger } from "../../logger.js";
import { toProtoDecision } from "../../wire/decision.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import type { JsonObject } from "../../wire/struct.js";
import { checkPayloadSize, type InvokeInput } from "../../wire/validate.js";
import type { ChainOwner, RunningCall, WaitReporter } from "./session.js";

/** What the governed calls of the face need. */
export interface GovernedCallOptions {
  governor: Governor;
  /** The agent name of every call (TOLLGATE_AGENT_NAME). */
  agentName: string;
  /** The mcp upstream the face mirrors. */
  upstreamName: string;
  maxPayloadBytes: number;
  log: Logger;
}

/** See the module comment. */
export class GovernedCalls {
  readonly #o: GovernedCallOptions;

  constructor(options: GovernedCallOptions) {
    this.#o = options;
  }

  /** One governed tools/call, as {@link invoke}; refusals become tool error results (never rejects). */
  async call(...args: Parameters<GovernedCalls["invoke"]>): Promise<CallToolResult> {
    try {
      return await this.invoke(...args);
    } catch (err) {
      return this.refusalOf(err, args[0].openedChainId);
    }
  }

  /**
   * One governed tools/call in `owner`'s chain (opened on its first call).
   * @throws GatewayError for every refusal (wire/errors.ts); when `signal` aborts with a
   *   GatewayError reason, that very error (so a caller can tell its own detach apart).
   */
  async invoke(
    owner: ChainOwner,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    reporter: WaitReporter,
    running?: RunningCall,
  ): Promise<CallToolResult> {
    const controller = linkedController(signal);
    try {
      let payload: JsonObject;
      try {
        payload = checkPayloadSize(args as JsonObject, this.#o.maxPayloadBytes);
      } catch (err) {
        this.#o.governor.countInvalid("mcp");
        throw err;
      }
      owner.chainId ??= this.#openChain(owner);
      const opening = owner.chainId;
      const chainId = await opening.catch((err) => {
        if (owner.chainId === opening) owner.chainId = null; // retry on the next call
        throw err;
      });
      if (owner.chainId === opening) owner.openedChainId = chainId;
      const input = this.inputOf(chainId, tool, payload);
      if (running) {
        running.chainId = chainId;
        running.input = input;
      }
      const r = await this.#o.governor.invoke(input, controller, "mcp", { onWait: reporter.onWait });
      return resultOf(r, chainId);
    } finally {
      reporter.done();
    }
  }

  /**
   * The retry of a call waiting for approval `approvalId` in chain `chainId`, which this process
   * does not hold (another replica's, or from before a restart): Governor.adopt.
   * @throws GatewayError as invoke; INVALID_ARGUMENT (requestState), NOT_FOUND (see adopt).
   */
  async adopt(
    chainId: string,
    approvalId: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const controller = linkedController(signal);
    const input = this.inputOf(chainId, tool, args);
    return resultOf(await this.#o.governor.adopt(chainId, approvalId, input, controller, "mcp"), chainId);
  }

  /**
   * Withdraws a task's call (tasks/cancel): never forwarded, its invoke rejects CANCELLED. When
   * it waited for approval, the approval is withdrawn at the service too (POST
   * /v1/approvals/{id}/withdraw: cancelled, no longer decidable). Never rejects.
   */
  async withdraw(running: RunningCall, reason: string): Promise<void> {
    const approvalId =
      running.chainId !== null && running.input !== null
        ? this.#o.governor.withdraw(running.chainId, running.input, null, reason)
        : null;
    running.controller.abort(new GatewayError(ErrorCode.CANCELLED, reason));
    if (approvalId) await this.#o.governor.withdrawApproval(approvalId, reason);
  }

  /** The governed invocation of a tools/call of `tool` with `args` in chain `chainId`. */
  inputOf(chainId: string, tool: string, args: Record<string, unknown>): InvokeInput {
    return {
      chainId,
      agentName: this.#o.agentName,
      actionType: "tool_call",
      actionName: tool,
      payload: args as JsonObject,
      parentAgentName: null,
      upstream: this.#o.upstreamName,
    };
  }

  /** What `invoke` threw as a tool error result (an unexpected error is logged, and INTERNAL). */
  refusalOf(err: unknown, chainId: string | null): CallToolResult {
    if (err instanceof GatewayError) return refusal(err, chainId);
    this.#o.log.error({ err }, "unexpected error in an MCP tools/call");
    return refusal(new GatewayError(ErrorCode.INTERNAL, "internal error"), chainId);
  }

  /** Completes the owner's chain, if it has one (the session or the call ended). Never rejects. */
  async completeChain(
    owner: Pick<ChainOwner, "chainId">,
    failure: { mode: string; message: string } | null,
  ): Promise<void> {
    const chainId = await owner.chainId?.catch(() => null);
    if (!chainId) return;
    try {
      await this.#o.governor.completeChain(chainId, failure, new AbortController());
    } catch (err) {
      const e = err as GatewayError;
      if (e.code === ErrorCode.CHAIN_COMPLETED) return;
      this.#o.log.warn({ chainId, err: e.message }, "could not complete the chain of an MCP session or call");
    }
  }

  #openChain(owner: ChainOwner): Promise<string> {
    const { name, metadata } = owner.chainInfo();
    return this.#o.governor.openChain(
      name,
      { ...metadata, upstream: this.#o.upstreamName },
      new AbortController(),
    );
  }
}

/**
 * A controller aborted when `signal` aborts: with its reason when that is a GatewayError (a
 * caller's own detach), else CANCELLED.
 */
function linkedController(signal: AbortSignal): AbortController {
  const controller = new AbortController();
  const onAbort = () =>
    controller.abort(
      signal.reason instanceof GatewayError
        ? signal.reason
        : new GatewayError(ErrorCode.CANCELLED, "the MCP client cancelled the call"),
    );
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return controller;
}

/** A forwarded call's CallToolResult, with the chain and event ids in `_meta`. */
function resultOf(r: InvokeResult, chainId: string): CallToolResult {
  const result = JSON.parse(r.result!.resultJson) as CallToolResult;
  return {
    ...result,
    _meta: {
      ...result._meta,
      "tollgate.dev/chain_id": chainId,
      "tollgate.dev/event_id": r.decision.event_id,
    },
  };
}

/** A refused call as a tool error result. */
export function refusal(e: GatewayError, chainId: string | null): CallToolResult {
  const approvalId = e.context.approvalId ?? e.decision?.approval_id ?? null;
  return {
    content: [{ type: "text", text: `Tollgate refused the call (${e.code}): ${e.message}` }],
    isError: true,
    _meta: {
      "tollgate.dev/error_code": e.code,
      ...(e.decision && { "tollgate.dev/decision": toProtoDecision(e.decision, chainId ?? "") }),
      ...(approvalId && {
        "tollgate.dev/approval": {
          approval_id: approvalId,
          review_url: e.context.reviewUrl ?? null,
          policy_name: e.context.policyName ?? e.decision?.policy_name ?? null,
        },
      }),
    },
  };
}
