/** Pure parts of the adapters: tool payloads, type names, argument checks, install(). */
import { RunnableLambda } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { toolPayload } from "../../../src/sdk/callbacks.js";
import { Chain, createConfig, RuntimeError } from "../../../src/sdk/index.js";
import { govern as governChain, typeNameOf } from "../../../src/sdk/langchain.js";
import { govern as governGraph } from "../../../src/sdk/langgraph.js";
import { McpAdapter } from "../../../src/sdk/mcp.js";

describe("toolPayload", () => {
  it.each([
    ['{"amount_usd":5}', { amount_usd: 5 }],
    [{ a: 1 }, { a: 1 }],
    ["plain text", { input: "plain text" }],
    ["[1,2]", { input: "[1,2]" }],
    [7, { input: 7 }],
    [undefined, {}],
  ])("%j → %j", (input, expected) => {
    expect(toolPayload(input)).toEqual(expected);
  });
});

describe("typeNameOf", () => {
  it("is the constructor name, or 'langchain' for plain objects", () => {
    expect(typeNameOf(RunnableLambda.from((x: number) => x))).toBe("RunnableLambda");
    expect(typeNameOf({ invoke: async () => 1 })).toBe("langchain");
    expect(typeNameOf(Object.create(null))).toBe("langchain");
  });
});

describe("adapter arguments", () => {
  const config = createConfig("tg_unit");
  it("govern() needs an object with invoke()", () => {
    expect(() => governGraph({} as never, { config })).toThrow(/invoke/);
    expect(() => governChain(null as never, { config })).toThrow(/invoke/);
  });

  it("the default chain names are the spec's", () => {
    const runnable = RunnableLambda.from((x: number) => x);
    expect(governGraph(runnable, { config }).chainName).toBe("langgraph_workflow");
    expect(governChain(runnable, { config }).chainName).toBe("langchain_workflow");
    expect(governChain(runnable, { config, chainName: "mine" }).chainName).toBe("mine");
  });

  it("McpAdapter needs an entered chain; install() always throws RuntimeError", () => {
    const chain = new Chain("c", { config });
    expect(() => new McpAdapter(chain)).toThrow(TypeError);
    const adapter = Object.create(McpAdapter.prototype) as McpAdapter;
    expect(() => adapter.install({})).toThrow(RuntimeError);
  });
});
