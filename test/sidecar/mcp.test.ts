/**
 * MCP upstreams and the MCP face against the real @modelcontextprotocol/server-memory (stdio):
 * gRPC Invoke forwards to an MCP tool; an unmodified MCP client (@modelcontextprotocol/sdk
 * Client over Streamable HTTP) lists and calls the mirrored tools through the sidecar, every
 * tools/call governed in one chain per session, completed when the session closes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryUpstream, type Stack, startStack, waitForReceipt } from "./harness.js";

describe("MCP upstream and MCP face (server-memory over stdio)", () => {
  let s: Stack;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-mcp-memory-"));
    s = await startStack({
      slug: "mcp-org",
      config: { mcpUpstream: "memory", agentName: "assistant" },
      upstreams: [memoryUpstream(dir)],
    });
    const p = await s.admin("PUT", "/v1/admin/organizations/mcp-org/policies/rules", {
      config: {
        custom_rules: [
          {
            name: "keep-memories",
            match: { action_name: "delete_entities" },
            outcome: "deny",
            reason: "memories are kept",
          },
        ],
      },
    });
    expect(p.statusCode, p.body).toBeLessThan(300);
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("gRPC Invoke forwards to an MCP tool and returns its CallToolResult", async () => {
    const chainId = await s.openChain("grpc-to-mcp");
    const invoke = (action: string, payload: Record<string, unknown>) =>
      s.invoke({ chain_id: chainId, action_name: action, payload, upstream: "memory" });
    const created = await invoke("create_entities", {
      entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }],
    });
    expect(created.forwarded).toBe(true);
    expect(created.upstream_error).toBe(false);
    const graph = await invoke("read_graph", {});
    const result = JSON.parse(graph.result_json) as { content: { type: string; text: string }[] };
    expect(result.content[0]?.text).toContain("wrote the first program");

    const unknown = await invoke("no_such_tool", {});
    expect(unknown.upstream_error).toBe(true);
    await s.rpc("CompleteChain", { chain_id: chainId });
  });

  it("an MCP client lists and calls tools through the face; each call is governed in the session's chain", async () => {
    const client = new Client({ name: "test-agent", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${s.sidecar.httpUrl}/mcp`));
    await client.connect(transport);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(["create_entities", "read_graph", "delete_entities", "search_nodes"]),
    );

    const created = await client.callTool({
      name: "create_entities",
      arguments: { entities: [{ name: "Grace", entityType: "person", observations: ["found a moth"] }] },
    });
    expect(created.isError).toBeFalsy();
    const found = await client.callTool({ name: "search_nodes", arguments: { query: "Grace" } });
    expect(JSON.stringify(found.content)).toContain("found a moth");

    const denied = await client.callTool({ name: "delete_entities", arguments: { entityNames: ["Grace"] } });
    expect(denied.isError).toBe(true);
    const text = (denied.content as { type: string; text: string }[])[0]?.text ?? "";
    expect(text).toContain("memories are kept");
    const meta = denied._meta as Record<string, { chain_id?: string; policy_decision?: string }>;
    expect(meta["tollgate.dev/error_code"]).toBe("ACTION_DENIED");
    expect(meta["tollgate.dev/decision"]?.policy_decision).toBe("deny");
    const chainId = meta["tollgate.dev/decision"]?.chain_id;
    expect(chainId).toMatch(/^[0-9a-f-]{36}$/);

    // the denied call never reached the server: Grace is still there
    const still = await client.callTool({ name: "search_nodes", arguments: { query: "Grace" } });
    expect(JSON.stringify(still.content)).toContain("found a moth");

    const stored = await s.storedChain(chainId!);
    expect(stored.status).toBe("open");
    expect(stored.events.map((e) => [e.agent_name, e.action_type, e.action_name])).toEqual([
      ["assistant", "tool_call", "create_entities"],
      ["assistant", "tool_call", "search_nodes"],
      ["assistant", "tool_call", "delete_entities"],
      ["assistant", "tool_call", "search_nodes"],
    ]);

    await transport.terminateSession(); // HTTP DELETE: the session ends
    await client.close();
    const receipt = await waitForReceipt(s, chainId!);
    expect(receipt.chain_name).toBe("mcp-session");
    expect(receipt.metadata).toMatchObject({ mcp_client: "test-agent/1.0.0", upstream: "memory" });
    expect(
      receipt.events_summary.map((e) => [e.action_name, e.policy_decision, e.outcome?.status ?? null]),
    ).toEqual([
      ["create_entities", "allow", "success"],
      ["search_nodes", "allow", "success"],
      ["delete_entities", "deny", null],
      ["search_nodes", "allow", "success"],
    ]);
  });

  it("a second session gets its own chain", async () => {
    const chains = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const client = new Client({ name: `agent-${i}`, version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${s.sidecar.httpUrl}/mcp`));
      await client.connect(transport);
      const denied = await client.callTool({ name: "delete_entities", arguments: { entityNames: ["x"] } });
      chains.add((denied._meta as Record<string, { chain_id: string }>)["tollgate.dev/decision"]!.chain_id);
      await transport.terminateSession();
      await client.close();
    }
    expect(chains.size).toBe(2);
  });
});
