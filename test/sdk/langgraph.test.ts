/**
 * govern() of sdk/langgraph with a real @langchain/langgraph StateGraph (an agent node that
 * plans tool calls, a prebuilt ToolNode with real @langchain/core tools) against the real
 * service. No LLM: the agent node scripts its tool calls.
 */
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ActionDeniedError, Chain } from "../../src/sdk/index.js";
import { GovernedGraph, govern } from "../../src/sdk/langgraph.js";
import { makeTicker, type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
beforeAll(async () => {
  env = await startSdkEnv("sdk-langgraph");
});
afterAll(async () => env?.close());

/** A graph: agent → tools → agent → END. The agent asks for a lookup and a payment of `amount`. */
function buildGraph(amount: number, toolNode: { handleToolErrors?: boolean } = {}) {
  const ran = { agent: 0, lookup: 0, pay: [] as number[] };
  const lookup = tool(
    async ({ customer }) => {
      ran.lookup++;
      return `customer ${customer}: ok`;
    },
    {
      name: "lookup_customer",
      description: "Looks up a customer",
      schema: z.object({ customer: z.string() }),
    },
  );
  const pay = tool(
    async ({ amount_usd }) => {
      ran.pay.push(amount_usd);
      return `paid ${amount_usd}`;
    },
    { name: "pay_invoice", description: "Pays an invoice", schema: z.object({ amount_usd: z.number() }) },
  );
  const agent = async (state: typeof MessagesAnnotation.State) => {
    ran.agent++;
    const last = state.messages.at(-1);
    if (last instanceof ToolMessage || last?.getType() === "tool")
      return { messages: [new AIMessage("done")] };
    return {
      messages: [
        new AIMessage({
          content: "",
          tool_calls: [
            { id: "call_1", name: "lookup_customer", args: { customer: "acme" } },
            { id: "call_2", name: "pay_invoice", args: { amount_usd: amount } },
          ],
        }),
      ],
    };
  };
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("agent", agent)
    .addNode("tools", new ToolNode([lookup, pay], toolNode))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (s) =>
      (s.messages.at(-1) as AIMessage).tool_calls?.length ? "tools" : END,
    )
    .addEdge("tools", "agent")
    .compile();
  return { graph, ran };
}

const summary = async (chainId: string) =>
  (await env.stored(chainId)).events.map((e) => [
    e.agent_name,
    e.action_type,
    e.action_name,
    e.decision.policy_decision,
  ]);

describe("sdk/langgraph govern()", () => {
  it("records each node execution and tool call, then completes the chain with a receipt", async () => {
    const { graph, ran } = buildGraph(25);
    const governed = govern(graph, { metadata: { team: "billing" }, config: env.config() });
    expect(governed).toBeInstanceOf(GovernedGraph);
    expect(governed.chainName).toBe("langgraph_workflow");
    const out = await governed.invoke({ messages: [new HumanMessage("pay acme")] });
    expect((out.messages as BaseMessage[]).at(-1)?.content).toBe("done");
    expect(ran).toEqual({ agent: 2, lookup: 1, pay: [25] });

    const chainId = governed.lastChain!.chainId!;
    expect(await summary(chainId)).toEqual([
      ["agent", "node_execution", "agent", "allow"],
      ["tools", "node_execution", "tools", "allow"],
      ["tools", "tool_call", "lookup_customer", "allow"],
      ["tools", "tool_call", "pay_invoice", "allow"],
      ["agent", "node_execution", "agent", "allow"],
    ]);
    const stored = await env.stored(chainId);
    expect(stored.name).toBe("langgraph_workflow");
    expect(stored.status).toBe("completed");
    expect(stored.events[0]?.payload).toEqual({ langgraph_step: 1, langgraph_triggers: ["branch:to:agent"] });
    expect(stored.events[3]?.payload).toEqual({ amount_usd: 25 });
    const receipt = await governed.lastChain!.receipt();
    expect(receipt?.metadata).toEqual({ team: "billing" });
    expect(receipt?.agents_involved).toEqual(["agent", "tools"]);
  });

  it("a denied tool does not run; ToolNode's error handling returns the denial to the model", async () => {
    const { graph, ran } = buildGraph(25);
    const governed = govern(graph, {
      chainName: "lg-tool-deny",
      config: env.config(),
      policyConfig: {
        custom_rules: [
          {
            name: "no-payments",
            match: { action_name: "pay_invoice" },
            outcome: "deny",
            reason: "Payments are frozen",
          },
        ],
      },
    });
    const out = await governed.invoke({ messages: [new HumanMessage("pay acme")] });
    expect(ran.pay).toEqual([]);
    expect(ran.lookup).toBe(1);
    const toolMessages = (out.messages as BaseMessage[]).filter((m) => m.getType() === "tool");
    expect(String(toolMessages.find((m) => (m as ToolMessage).name === "pay_invoice")?.content)).toMatch(
      /Payments are frozen/,
    );
    expect(await summary(governed.lastChain!.chainId!)).toContainEqual([
      "tools",
      "tool_call",
      "pay_invoice",
      "deny",
    ]);
    expect((await env.stored(governed.lastChain!.chainId!)).status).toBe("completed");
  });

  it("without ToolNode error handling a denial stops the run and the chain is marked failed", async () => {
    const { graph, ran } = buildGraph(25, { handleToolErrors: false });
    const deny = govern(graph, {
      chainName: "lg-tool-deny-raise",
      config: env.config(),
      policyConfig: { financial_deny_threshold_usd: 10 },
    });
    const err = await deny.invoke({ messages: [new HumanMessage("pay acme")] }).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.policyName).toBe("financial_deny_threshold");
    expect(ran.pay).toEqual([]);
    const stored = await env.stored(deny.lastChain!.chainId!);
    expect(stored.status).toBe("failed");
    expect(stored.failure?.mode).toBe("ActionDeniedError");
  });

  it("a denied node does not run", async () => {
    const { graph, ran } = buildGraph(25);
    const governed = govern(graph, {
      chainName: "lg-node-deny",
      config: env.config(),
      policyConfig: {
        custom_rules: [
          {
            name: "agent-disabled",
            match: { action_type: "node_execution", action_name: "agent" },
            outcome: "deny",
          },
        ],
      },
    });
    const err = await governed.invoke({ messages: [new HumanMessage("pay acme")] }).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.policyName).toBe("agent-disabled");
    expect(ran.agent).toBe(0);
    expect(await summary(governed.lastChain!.chainId!)).toEqual([
      ["agent", "node_execution", "agent", "deny"],
    ]);
  });

  it("a tool call that requires approval blocks the graph until a reviewer approves", async () => {
    const ticker = makeTicker();
    const { graph, ran } = buildGraph(7500);
    const governed = govern(graph, { chainName: "lg-approval", config: env.config({}, ticker) });
    ticker.onTick = async (n) => {
      expect(ran.pay).toEqual([]);
      if (n !== 2) return;
      const st = await env.t.call("GET", `/v1/chains/${governed.lastChain!.chainId}/approval-status`, {
        token: env.org.clientKey,
      });
      await env.decide(st.json().approval.approval_id, { decision: "approve" });
    };
    await governed.invoke({ messages: [new HumanMessage("pay acme")] });
    expect(ran.pay).toEqual([7500]);
    expect(ticker.sleeps).toEqual([5000, 5000]);
    const rec = governed.lastHandler!.recorded.find((r) => r.action_name === "pay_invoice");
    expect(rec?.decision.decision_source).toBe("human_approval");
  });

  it("stream() yields the graph's updates inside a chain and completes it", async () => {
    const { graph } = buildGraph(25);
    const governed = govern(graph, { chainName: "lg-stream", config: env.config() });
    const nodes: string[] = [];
    for await (const chunk of governed.stream(
      { messages: [new HumanMessage("pay acme")] },
      { streamMode: "updates" },
    )) {
      nodes.push(...Object.keys(chunk as Record<string, unknown>));
    }
    expect(nodes).toEqual(["agent", "tools", "agent"]);
    expect((await env.stored(governed.lastChain!.chainId!)).status).toBe("completed");
  });

  it("records into a passed, entered chain and leaves it open", async () => {
    const { graph } = buildGraph(25);
    const chain = await new Chain("lg-shared", { config: env.config() }).enter();
    const governed = govern(graph, { config: env.config() });
    await governed.invoke({ messages: [new HumanMessage("pay acme")] }, { chain });
    await governed.invoke({ messages: [new HumanMessage("pay acme again")] }, { chain });
    const stored = await env.stored(chain.chainId!);
    expect(stored.status).toBe("open");
    expect(stored.events).toHaveLength(10);
    await chain.exit();
  });
});
