/**
 * McpAdapter with the real MCP SDK: an McpServer whose tools are wrapped with adapter.tool()
 * and a Client over InMemoryTransport; and a governed proxy in front of the real
 * @modelcontextprotocol/server-memory package over stdio. The service is the real one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ActionDeniedError, Chain, RuntimeError } from "../../src/sdk/index.js";
import { McpAdapter } from "../../src/sdk/mcp.js";
import { makeTicker, type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
beforeAll(async () => {
  env = await startSdkEnv("sdk-mcp");
});
afterAll(async () => env?.close());

type TextResult = { content: { type: string; text: string }[]; isError?: boolean };

describe("McpAdapter with McpServer and Client (InMemoryTransport)", () => {
  it("records each tool call, runs allowed ones, and blocks denied ones before the handler", async () => {
    const ticker = makeTicker();
    const chain = await new Chain("mcp-server", {
      config: env.config({}, ticker),
      policyConfig: { financial_approval_threshold_usd: 500 },
    })
      .addFinancialThreshold(1000, null, true)
      .enter();
    const adapter = new McpAdapter(chain, { parentAgentName: "planner" });
    expect(() => adapter.install({})).toThrow(RuntimeError);

    const paid: number[] = [];
    const server = new McpServer({ name: "billing", version: "1.0.0" });
    server.registerTool(
      "read_report",
      { description: "Reads a report", inputSchema: { path: z.string() } },
      adapter.tool("read_report")(async ({ path: p }) => ({
        content: [{ type: "text" as const, text: `report ${p}` }],
      })),
    );
    server.registerTool(
      "pay_invoice",
      { description: "Pays an invoice", inputSchema: { amount_usd: z.number() } },
      adapter.tool("pay_invoice")(async ({ amount_usd }) => {
        paid.push(amount_usd);
        return { content: [{ type: "text" as const, text: `paid ${amount_usd}` }] };
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(clientSide);
    try {
      const read = (await client.callTool({ name: "read_report", arguments: { path: "/q3" } })) as TextResult;
      expect(read.isError).toBeFalsy();
      expect(read.content[0]?.text).toBe("report /q3");

      const denied = (await client.callTool({
        name: "pay_invoice",
        arguments: { amount_usd: 5000 },
      })) as TextResult;
      expect(denied.isError).toBe(true);
      expect(denied.content[0]?.text).toMatch(/Action denied by policy \(financial_deny_threshold\)/);
      expect(paid).toEqual([]);

      // require_approval: the tool call blocks until a reviewer approves, then runs.
      ticker.onTick = async (n) => {
        if (n !== 1) return;
        const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
          token: env.org.clientKey,
        });
        await env.decide(st.json().approval.approval_id, { decision: "approve" });
      };
      const approved = (await client.callTool({
        name: "pay_invoice",
        arguments: { amount_usd: 700 },
      })) as TextResult;
      expect(approved.content[0]?.text).toBe("paid 700");
      expect(paid).toEqual([700]);
      expect(adapter.lastDecision?.decision_source).toBe("human_approval");

      const stored = await env.stored(chain.chainId!);
      expect(
        stored.events.map((e) => [
          e.agent_name,
          e.parent_agent_name,
          e.action_type,
          e.action_name,
          e.payload,
        ]),
      ).toEqual([
        ["mcp-agent", "planner", "tool_call", "read_report", { path: "/q3" }],
        ["mcp-agent", "planner", "tool_call", "pay_invoice", { amount_usd: 5000 }],
        ["mcp-agent", "planner", "tool_call", "pay_invoice", { amount_usd: 700 }],
      ]);
      expect(stored.events.map((e) => e.decision.policy_decision)).toEqual(["allow", "deny", "allow"]);
    } finally {
      await client.close();
      await server.close();
      await chain.exit();
    }
  });

  it("requires an entered chain", () => {
    const chain = new Chain("not-entered", { config: env.config() });
    expect(() => new McpAdapter(chain)).toThrow(/entered/);
  });
});

describe("McpAdapter in front of @modelcontextprotocol/server-memory (stdio)", () => {
  let dir: string;
  let client: Client;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-mcp-memory-"));
    const entry = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-memory/dist/index.js");
    client = new Client({ name: "governed-proxy", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [entry],
        env: { MEMORY_FILE_PATH: path.join(dir, "memory.jsonl"), PATH: process.env.PATH ?? "" },
        stderr: "pipe",
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("forwards allowed calls to the real server and stops denied ones", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["create_entities", "delete_entities", "read_graph"]),
    );
    const chain = await new Chain("mcp-memory", {
      config: env.config(),
      policyConfig: {
        custom_rules: [
          {
            name: "no-forgetting",
            match: { action_name: "delete_*" },
            outcome: "deny",
            reason: "Deleting memories is not allowed",
          },
        ],
      },
    }).enter();
    const adapter = new McpAdapter(chain, { agentName: "memory-agent" });
    const call = (name: string, args: Record<string, unknown>) =>
      adapter.handleToolCall(name, args, (a) => client.callTool({ name, arguments: a }));
    const graph = async () => {
      const res = (await client.callTool({ name: "read_graph", arguments: {} })) as {
        structuredContent?: { entities: { name: string; observations: string[] }[] };
      };
      return res.structuredContent?.entities ?? [];
    };

    const secret = "sk_live_0123456789abcdef";
    await call("create_entities", {
      entities: [{ name: "Acme", entityType: "customer", observations: ["prefers email", secret] }],
    });
    expect(await graph()).toEqual([
      expect.objectContaining({ name: "Acme", observations: ["prefers email", secret] }),
    ]);

    const err = await call("delete_entities", { entityNames: ["Acme"] }).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.policyName).toBe("no-forgetting");
    expect(err.condition).toBe("Deleting memories is not allowed");
    expect((await graph()).map((e) => e.name)).toEqual(["Acme"]);

    const stored = await env.stored(chain.chainId!);
    expect(stored.events.map((e) => [e.agent_name, e.action_name, e.decision.policy_decision])).toEqual([
      ["memory-agent", "create_entities", "allow"],
      ["memory-agent", "delete_entities", "deny"],
    ]);
    // The governance record is sanitized; the tool received the original arguments.
    expect(JSON.stringify(stored.events[0]?.payload)).not.toContain(secret);
    expect(JSON.stringify(stored.events[0]?.payload)).toContain("[REDACTED]");
    await chain.exit();
  });
});
