/**
 * LangGraph adapter (spec: "Framework adapters" → sdk.langgraph.govern). Wraps a compiled
 * graph (`new StateGraph(...)...compile()`) so that every run opens a chain named
 * `chainName` (default "langgraph_workflow") and records each node execution and each tool call
 * before it runs (see ./callbacks.ts for what is recorded). A denial stops the run; a tool
 * denial inside a ToolNode with handleToolErrors (its default) becomes an error ToolMessage for
 * the model instead, and the tool does not run. Subgraph nodes are not recorded separately.
 */
import { GovernanceMode } from "./callbacks.js";
import { GovernedRunnable, type GovernOptions, type RunnableLike } from "./governed.js";

export type { GovernedRunOptions, GovernOptions } from "./governed.js";

/** The default chain name of LangGraph runs. */
export const DEFAULT_LANGGRAPH_CHAIN_NAME = "langgraph_workflow";

/** A governed compiled LangGraph graph: `invoke` and `stream` like the graph's own. */
export class GovernedGraph<I = unknown, O = unknown> extends GovernedRunnable<I, O> {
  constructor(compiledGraph: RunnableLike<I, O>, opts: GovernOptions = {}) {
    super(compiledGraph, GovernanceMode.langgraph, DEFAULT_LANGGRAPH_CHAIN_NAME, opts);
  }

  /** The wrapped compiled graph. */
  get graph(): RunnableLike<I, O> {
    return this.runnable;
  }
}

/**
 * Governs a compiled LangGraph graph (spec: govern(compiled_graph, chain_name, metadata)).
 * @throws TypeError when `compiledGraph` has no invoke method.
 */
export function govern<I, O>(
  compiledGraph: RunnableLike<I, O>,
  opts: GovernOptions = {},
): GovernedGraph<I, O> {
  return new GovernedGraph(compiledGraph, opts);
}
