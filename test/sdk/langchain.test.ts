/**
 * govern() of sdk/langchain with real @langchain/core runnables and tools, and with a real
 * langchain createAgent() agent (langchain's own FakeToolCallingModel stands in for the LLM),
 * against the real service.
 */
import { HumanMessage } from "@langchain/core/messages";
import { PromptTemplate } from "@langchain/core/prompts";
import { RunnableLambda, RunnableSequence } from "@langchain/core/runnables";
import { tool } from "@langchain/core/tools";
import { createAgent, FakeToolCallingModel } from "langchain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ActionDeniedError } from "../../src/sdk/index.js";
import { GovernedChain, govern, typeNameOf } from "../../src/sdk/langchain.js";
import { type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
beforeAll(async () => {
  env = await startSdkEnv("sdk-langchain");
});
afterAll(async () => env?.close());

const payments: number[] = [];
const payInvoice = tool(
  async ({ amount_usd }) => {
    payments.push(amount_usd);
    return `paid ${amount_usd}`;
  },
  { name: "pay_invoice", description: "Pays an invoice", schema: z.object({ amount_usd: z.number() }) },
);

const summary = async (chainId: string) =>
  (await env.stored(chainId)).events.map((e) => [
    e.agent_name,
    e.action_type,
    e.action_name,
    e.payload,
    e.decision.policy_decision,
  ]);

describe("sdk/langchain govern()", () => {
  it("records the invocation and the tools it calls, with the wrapped type name as agent", async () => {
    payments.length = 0;
    const lambda = RunnableLambda.from(async (input: { invoice: string; amount_usd: number }) => {
      const receipt = await payInvoice.invoke({ amount_usd: input.amount_usd });
      return `${input.invoice}: ${receipt}`;
    });
    const governed = govern(lambda, { metadata: { app: "ap" }, config: env.config() });
    expect(governed).toBeInstanceOf(GovernedChain);
    expect(governed.chainName).toBe("langchain_workflow");
    expect(governed.agentName).toBe("RunnableLambda");
    expect(await governed.invoke({ invoice: "INV-7", amount_usd: 40 })).toBe("INV-7: paid 40");
    expect(payments).toEqual([40]);
    const chainId = governed.lastChain!.chainId!;
    expect(await summary(chainId)).toEqual([
      ["RunnableLambda", "chain_execution", "RunnableLambda", { invoice: "INV-7", amount_usd: 40 }, "allow"],
      ["RunnableLambda", "tool_call", "pay_invoice", { amount_usd: 40 }, "allow"],
    ]);
    const stored = await env.stored(chainId);
    expect(stored).toMatchObject({
      name: "langchain_workflow",
      status: "completed",
      metadata: { app: "ap" },
    });
  });

  it("uses the wrapped object's type name: RunnableSequence, or a subclass's own name", async () => {
    const seq = RunnableSequence.from([
      PromptTemplate.fromTemplate("Summarize {topic}"),
      (p) => p.toString(),
    ]);
    const governed = govern(seq, { chainName: "lc-seq", config: env.config() });
    expect(governed.agentName).toBe("RunnableSequence");
    expect(await governed.invoke({ topic: "receipts" })).toBe("Summarize receipts");
    expect((await summary(governed.lastChain!.chainId!))[0]?.slice(0, 3)).toEqual([
      "RunnableSequence",
      "chain_execution",
      "RunnableSequence",
    ]);

    class InvoiceAgent extends RunnableLambda<string, string> {}
    const custom = govern(new InvoiceAgent({ func: async (s: string) => s.toUpperCase() }), {
      chainName: "lc-subclass",
      config: env.config(),
    });
    expect(custom.agentName).toBe("InvoiceAgent");
    expect(await custom.invoke("ok")).toBe("OK");
    expect((await summary(custom.lastChain!.chainId!))[0]?.slice(0, 2)).toEqual([
      "InvoiceAgent",
      "chain_execution",
    ]);
    expect(typeNameOf({})).toBe("langchain");
  });

  it("a governed tool is recorded once, as a tool call", async () => {
    payments.length = 0;
    const governed = govern(payInvoice, { chainName: "lc-tool", config: env.config() });
    expect(governed.agentName).toBe("DynamicStructuredTool");
    expect(await governed.invoke({ amount_usd: 12 })).toBe("paid 12");
    expect(await summary(governed.lastChain!.chainId!)).toEqual([
      ["DynamicStructuredTool", "tool_call", "pay_invoice", { amount_usd: 12 }, "allow"],
    ]);
  });

  it("a denied tool does not run; the run fails and the chain is marked failed", async () => {
    payments.length = 0;
    const lambda = RunnableLambda.from(async (amount: number) => payInvoice.invoke({ amount_usd: amount }));
    const governed = govern(lambda, {
      chainName: "lc-deny",
      config: env.config(),
      policyConfig: { financial_deny_threshold_usd: 100 },
    });
    const err = await governed.invoke(500).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.policyName).toBe("financial_deny_threshold");
    expect(payments).toEqual([]);
    const chainId = governed.lastChain!.chainId!;
    expect(await summary(chainId)).toEqual([
      ["RunnableLambda", "chain_execution", "RunnableLambda", { input: 500 }, "allow"],
      ["RunnableLambda", "tool_call", "pay_invoice", { amount_usd: 500 }, "deny"],
    ]);
    expect((await env.stored(chainId)).failure?.mode).toBe("ActionDeniedError");
  });

  it("governs a langchain createAgent() agent and its tool calls", async () => {
    payments.length = 0;
    const model = new FakeToolCallingModel({
      toolCalls: [[{ name: "pay_invoice", args: { amount_usd: 30 }, id: "call_1" }], []],
    });
    const agent = createAgent({ model, tools: [payInvoice] });
    const governed = govern(agent, { chainName: "lc-agent", config: env.config() });
    expect(governed.agentName).toBe("ReactAgent");
    const out = (await governed.invoke({ messages: [new HumanMessage("pay invoice 7")] })) as {
      messages: { content: unknown }[];
    };
    expect(payments).toEqual([30]);
    expect(out.messages.some((m) => m.content === "paid 30")).toBe(true);
    const events = await summary(governed.lastChain!.chainId!);
    expect(events[0]?.slice(0, 2)).toEqual(["ReactAgent", "chain_execution"]);
    expect(events).toContainEqual(["ReactAgent", "tool_call", "pay_invoice", { amount_usd: 30 }, "allow"]);
    expect(events).toHaveLength(2);
  });
});
