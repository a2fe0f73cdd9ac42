/**
 * MCP adapter (spec: "Framework adapters" → sdk.mcp.McpAdapter). Governs MCP tool calls through
 * an already-entered Chain: each call is recorded as action_type "tool_call" with action_name =
 * the tool name and payload = the call's arguments (sanitized for the record; the handler gets
 * the original arguments), and the handler runs only when the backend allows it (after an
 * approval when one is required). Denials, kill switch, auto-pause and fail-mode denials are
 * thrown before the handler runs; inside an McpServer tool callback they become an
 * `isError: true` tool result carrying the error message.
 *
 * Works on both sides of MCP:
 * - server side: `server.registerTool(name, config, adapter.tool(name)(handler))`;
 * - client/proxy side: `adapter.handleToolCall(name, args, (a) => client.callTool({ name, arguments: a }))`.
 *
 * `install(server)` always throws (spec): there is no safe generic way to patch a server's
 * handlers; wrap each tool explicitly.
 */
import type { Chain } from "./chain.js";
import type { PolicyDecision } from "./decision.js";
import { RuntimeError } from "./exceptions.js";

/** Options of McpAdapter. */
export interface McpAdapterOptions {
  /** The agent recorded for every tool call; default "mcp-agent". */
  agentName?: string;
  /** The delegating agent, for hierarchical workflows; default none. */
  parentAgentName?: string | null;
}

/** Per-call options of handleToolCall. */
export interface ToolCallOptions {
  /** Stops waiting for the decision (e.g. the MCP request's cancellation signal). */
  signal?: AbortSignal;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The AbortSignal of an MCP RequestHandlerExtra (`extra.signal`), if the argument has one. */
const signalOf = (extra: unknown): AbortSignal | undefined => {
  const signal = isRecord(extra) ? extra.signal : undefined;
  return signal instanceof AbortSignal ? signal : undefined;
};

/** Governs MCP tool calls through an entered chain (see the module comment). */
export class McpAdapter {
  readonly chain: Chain;
  readonly agentName: string;
  readonly parentAgentName: string | null;
  /** The decision of the most recent allowed call (for logging; null before the first). */
  lastDecision: PolicyDecision | null = null;

  /**
   * @param chain an already-entered Chain.
   * @throws TypeError when the chain has not been entered or agentName is empty.
   */
  constructor(chain: Chain, opts: McpAdapterOptions = {}) {
    if (!chain || chain.chainId === null) throw new TypeError("McpAdapter: chain: must be an entered Chain");
    const agentName = opts.agentName ?? "mcp-agent";
    if (typeof agentName !== "string" || agentName.trim() === "") {
      throw new TypeError("McpAdapter: agentName: must be a non-empty string");
    }
    this.chain = chain;
    this.agentName = agentName;
    this.parentAgentName = opts.parentAgentName ?? null;
  }

  /**
   * Records the tool call and, when allowed, runs `handler(args)` and returns its result.
   * @param toolName the MCP tool name (action_name).
   * @param args the tool arguments (payload; non-object arguments are recorded as `{arguments}`).
   * @throws every error of Chain.recordAgentAction (ActionDeniedError, ServiceKillSwitchError,
   *   ChainAutoPausedError, ChainTimeoutError, BackendUnavailableError, ...) — the handler is
   *   then not called; otherwise whatever the handler throws.
   */
  async handleToolCall<A, R>(
    toolName: string,
    args: A,
    handler: (args: A) => R | Promise<R>,
    opts: ToolCallOptions = {},
  ): Promise<R> {
    const payload = isRecord(args) ? args : args === undefined ? {} : { arguments: args };
    const decision = await this.chain.recordAgentAction(
      {
        agentName: this.agentName,
        actionType: "tool_call",
        actionName: toolName,
        payload,
        parentAgentName: this.parentAgentName,
      },
      { signal: opts.signal },
    );
    this.lastDecision = decision;
    return handler(args);
  }

  /**
   * A wrapper for an MCP tool callback (the spec's `tool(tool_name)` decorator):
   * `adapter.tool("pay")(async (args, extra) => result)` returns a callback with the same
   * signature that records the call first. The MCP request's `extra.signal` aborts the wait.
   */
  tool(toolName: string) {
    return <A, Rest extends unknown[], R>(
      handler: (args: A, ...rest: Rest) => R | Promise<R>,
    ): ((args: A, ...rest: Rest) => Promise<R>) =>
      (args: A, ...rest: Rest) =>
        this.handleToolCall(toolName, args, (a) => handler(a, ...rest), { signal: signalOf(rest[0]) });
  }

  /**
   * Always throws (spec: install(server) always raises RuntimeError).
   * @throws RuntimeError
   */
  install(_server: unknown): never {
    throw new RuntimeError(
      "McpAdapter.install() is not supported: wrap each tool callback with adapter.tool(name)(handler), " +
        "or call adapter.handleToolCall(name, args, handler)",
    );
  }
}
