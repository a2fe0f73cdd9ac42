/**
 * The LangChain callback handler behind the langgraph and langchain adapters. LangChain calls
 * it before every runnable and tool starts; it records the governed ones into the chain and,
 * because it is registered with `raiseError` (so LangChain awaits it), a denial thrown here
 * stops the run before the node or tool executes. While an approval is pending it blocks the
 * run. Recordings of one run are serialized: parallel LangGraph branches wait for each other's
 * decision instead of hitting the service's "approval pending" conflict.
 *
 * What is recorded:
 * - langgraph: each node execution (agent_name = action_name = node name, action_type
 *   "node_execution", payload `{langgraph_step, langgraph_triggers}`), internal `__start__`-style
 *   nodes excluded; each tool call (agent_name = the node that ran it, action_type "tool_call",
 *   action_name = tool name, payload = the tool arguments).
 * - langchain: the invocation itself (agent_name = the wrapped object's type name, action_type
 *   "chain_execution", action_name = its run name, payload = the input), and each tool call
 *   inside it (action_type "tool_call"). When the wrapped object is itself a tool, the one
 *   record is the tool call.
 *
 * LangChain logs a handler error with console.error before rethrowing it, so a denial also
 * shows up on stderr as "Error in handler GovernanceCallbackHandler, ...".
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import type { ChainValues } from "@langchain/core/utils/types";
import type { Chain } from "./chain.js";
import type { PolicyDecision } from "./decision.js";

/** Which framework's runs are governed. */
export const GovernanceMode = { langgraph: "langgraph", langchain: "langchain" } as const;
export type GovernanceMode = (typeof GovernanceMode)[keyof typeof GovernanceMode];

/** Options of the handler. */
export interface GovernanceHandlerOptions {
  chain: Chain;
  mode: GovernanceMode;
  /** langchain mode: the agent name (the wrapped object's type name). */
  agentName?: string;
  /** Aborts a pending approval wait. */
  signal?: AbortSignal;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A tool's input as a payload object: the parsed JSON arguments, else `{input}`. */
export const toolPayload = (input: unknown): Record<string, unknown> => {
  if (isRecord(input)) return input;
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input);
      if (isRecord(parsed)) return parsed;
    } catch {
      // plain text input
    }
  }
  return input === undefined ? {} : { input };
};

/** The class name LangChain serialized a runnable under (last element of `id`), or "". */
const serializedName = (s: Serialized | undefined): string => {
  const id = (s as { id?: unknown } | undefined)?.id;
  return Array.isArray(id) && typeof id.at(-1) === "string" ? (id.at(-1) as string) : "";
};

/** One recorded action of a run, for inspection (data: the wire's snake_case names). */
export interface RecordedRunAction {
  agent_name: string;
  action_type: string;
  action_name: string;
  decision: PolicyDecision;
}

/** Records governed LangChain/LangGraph runs into a chain (see the module comment). */
export class GovernanceCallbackHandler extends BaseCallbackHandler {
  name = "tollgate_governance";
  readonly #opts: GovernanceHandlerOptions;
  #rootRunId: string | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  /** The allowed actions recorded by this handler, in order. */
  readonly recorded: RecordedRunAction[] = [];

  constructor(opts: GovernanceHandlerOptions) {
    super({ raiseError: true });
    this.#opts = opts;
  }

  /** Records one action; one at a time per handler. Throws the recording's error. */
  #record(agentName: string, actionType: string, actionName: string, payload: Record<string, unknown>) {
    const run = this.#queue.then(() =>
      this.#opts.chain.recordAgentAction(
        { agentName, actionType, actionName, payload },
        { signal: this.#opts.signal },
      ),
    );
    this.#queue = run.catch(() => undefined);
    return run.then((decision) => {
      this.recorded.push({
        agent_name: agentName,
        action_type: actionType,
        action_name: actionName,
        decision,
      });
    });
  }

  override async handleChainStart(
    chain: Serialized,
    inputs: ChainValues,
    runId: string,
    parentRunId?: string,
    tags?: string[],
    metadata?: Record<string, unknown>,
    _runType?: string,
    runName?: string,
  ): Promise<void> {
    const isRoot = this.#rootRunId === null;
    if (isRoot) this.#rootRunId = runId;
    if (this.#opts.mode === "langchain") {
      if (!isRoot) return;
      const name = runName || serializedName(chain) || "invoke";
      await this.#record(this.#agentName(), "chain_execution", name, toolPayload(inputs));
      return;
    }
    const node = metadata?.langgraph_node;
    if (isRoot || parentRunId !== this.#rootRunId || typeof node !== "string" || node !== runName) return;
    if (node.startsWith("__") || tags?.includes("langsmith:hidden")) return;
    await this.#record(node, "node_execution", node, {
      langgraph_step: metadata?.langgraph_step ?? null,
      langgraph_triggers: metadata?.langgraph_triggers ?? null,
    });
  }

  override async handleToolStart(
    tool: Serialized,
    input: string,
    runId: string,
    _parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
  ): Promise<void> {
    if (this.#rootRunId === null) this.#rootRunId = runId;
    const toolName = runName || serializedName(tool) || "tool";
    const agent =
      this.#opts.mode === "langgraph"
        ? typeof metadata?.langgraph_node === "string"
          ? metadata.langgraph_node
          : "langgraph"
        : this.#agentName();
    await this.#record(agent, "tool_call", toolName, toolPayload(input));
  }

  #agentName(): string {
    return this.#opts.agentName || "langchain";
  }
}
