/**
 * LangChain adapter (spec: "Framework adapters" → sdk.langchain.govern). Wraps any LangChain
 * runnable — a chain (RunnableSequence, RunnableLambda, ...), a tool, or an agent such as
 * langchain's createAgent() ReactAgent (the successor of AgentExecutor) — so that every run
 * opens a chain named `chainName` (default "langchain_workflow"), records the invocation and
 * each tool call before it runs (see ./callbacks.ts), and completes the chain afterwards.
 * The agent name is the wrapped object's type name (`constructor.name`), taken at wrap time.
 */
import { GovernanceMode } from "./callbacks.js";
import { GovernedRunnable, type GovernOptions, type RunnableLike } from "./governed.js";

export type { GovernedRunOptions, GovernOptions } from "./governed.js";

/** The default chain name of LangChain runs. */
export const DEFAULT_LANGCHAIN_CHAIN_NAME = "langchain_workflow";

/** The type name of an object at wrap time ("RunnableSequence", "ReactAgent", ...). */
export const typeNameOf = (value: object): string => {
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" && name !== "Object" ? name : "langchain";
};

/** A governed LangChain runnable or agent: `invoke` and `stream` like the wrapped object's. */
export class GovernedChain<I = unknown, O = unknown> extends GovernedRunnable<I, O> {
  /** The agent name recorded for every action: the wrapped object's type name at wrap time. */
  readonly agentName: string;

  constructor(agentExecutorOrChain: RunnableLike<I, O>, opts: GovernOptions = {}) {
    const agentName = agentExecutorOrChain ? typeNameOf(agentExecutorOrChain) : "langchain";
    super(agentExecutorOrChain, GovernanceMode.langchain, DEFAULT_LANGCHAIN_CHAIN_NAME, opts, agentName);
    this.agentName = agentName;
  }
}

/**
 * Governs a LangChain runnable or agent (spec: govern(agent_executor_or_chain, chain_name,
 * metadata)).
 * @throws TypeError when the object has no invoke method.
 */
export function govern<I, O>(
  agentExecutorOrChain: RunnableLike<I, O>,
  opts: GovernOptions = {},
): GovernedChain<I, O> {
  return new GovernedChain(agentExecutorOrChain, opts);
}
