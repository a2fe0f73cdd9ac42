import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nextPendingApproval, type Stack, startMemoryStack, waitForReceipt } from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Approvals are granted this long after they were seen pending (the client retries meanwhile). */
const APPROVE_AFTER_MS = 3000;

describe("MCP face, revision 2026-07-28 (official client 2.x)", () => {
  let s: Stack;
  let mcpUrl: URL;
  const seen = new Set<string>();

  beforeAll(async () => {
    s = await startMemoryStack("mcp-modern-org", {
      mcpSessionIdleSeconds: 2,
      servicePublicUrl: "https://tollgate.example.com/",
    });
    mcpUrl = new URL(`${s.sidecar.httpUrl}/mcp`);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  const reviewUrl = (id: string) => `https://tollgate.example.com/dashboard/approvals#approval-${id}`;
  const entity = (name: string) => ({
    entities: [{ name, entityType: "person", observations: ["reviewed"] }],
  });
  const connect = async (name: string, options: ConstructorParameters<typeof Client>[1] = {}) => {
    const client = new Client(
      { name, version: "1.0.0" },
      { ...options, versionNegotiation: { mode: "auto" } },
    );
    await client.connect(new StreamableHTTPClientTransport(mcpUrl));
    return client;
  };
  const nextPending = () => nextPendingApproval(s, seen);
  const receiptOf = (chainId: string) => waitForReceipt(s, chainId, 20_000);
  const chainOf = (r: { _meta?: Record<string, unknown> }) => r._meta?.["tollgate.dev/chain_id"] as string;

  it("negotiates the modern era; tools/list; an allowed call runs in a chain of its own, completed with a receipt", async () => {
    const client = await connect("modern-agent");
    expect(client.getProtocolEra()).toBe("modern");
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["create_entities", "search_nodes"]));
    const r = await client.callTool({ name: "search_nodes", arguments: { query: "nobody" } });
    expect(r.isError).toBeFalsy();
    expect(r._meta?.["io.modelcontextprotocol/serverInfo"]).toMatchObject({ name: "tollgate-sidecar" });
    const receipt = await receiptOf(chainOf(r));
    expect(receipt.metadata).toMatchObject({ mcp_era: "modern", mcp_client: "modern-agent/1.0.0" });
    expect(receipt.events_summary.map((e) => e.action_name)).toEqual(["search_nodes"]);
    // A second call is a chain of its own (no session).
    const again = await client.callTool({ name: "search_nodes", arguments: { query: "nobody" } });
    expect(chainOf(again)).not.toBe(chainOf(r));
    await client.close();
  });

  it("approval wait: input_required with the review URL, the client's retries re-attach, the tool runs once after the approval", async () => {
    const elicitations: Record<string, unknown>[] = [];
    const client = await connect("modern-waiter", { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler("elicitation/create", async (req) => {
      elicitations.push(req.params as Record<string, unknown>);
      return { action: "accept" }; // the user saw the URL; only the approver decides
    });
    const order: string[] = [];
    const approval = (async () => {
      const p = await nextPending();
      await sleep(APPROVE_AFTER_MS);
      order.push("approve sent");
      await s.decide(p.approval_id, "approve");
      return p;
    })();
    const result = await client.callTool({ name: "create_entities", arguments: entity("Lovelace") });
    order.push("result");
    const pending = await approval;
    expect(order).toEqual(["approve sent", "result"]);
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain("Lovelace");
    expect(chainOf(result)).toBe(pending.chain_id);
    expect(elicitations).toEqual([
      expect.objectContaining({ mode: "url", url: reviewUrl(pending.approval_id) }),
    ]);
    // One action, one approval, forwarded once: the chain's only event, with one success outcome.
    const receipt = await receiptOf(pending.chain_id);
    expect(receipt.events_summary.map((e) => e.action_name)).toEqual(["create_entities"]);
    const stored = await s.storedChain(pending.chain_id);
    expect(stored.events).toHaveLength(1);
    expect(stored.events[0]).toMatchObject({ outcome: { status: "success" } });
    expect((await s.pendingApprovals()).filter((a) => a.chain_id === pending.chain_id)).toEqual([]);
    const graph = await client.callTool({ name: "read_graph", arguments: {} });
    expect(JSON.stringify(graph.content).match(/Lovelace/g)).toHaveLength(1);
    await client.close();
  });

  it("the requestState re-attaches from another connection; altered or reused for other arguments it is refused", async () => {
    const manual = { inputRequired: { autoFulfill: false } };
    const first = await connect("modern-first", manual);
    const call = (c: Client, params: Record<string, unknown>) =>
      c.callTool({ name: "create_entities", ...params } as Parameters<Client["callTool"]>[0], {
        allowInputRequired: true,
      }) as Promise<Record<string, unknown>>;
    const asked = await call(first, { arguments: entity("Babbage") });
    expect(asked).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    expect(asked.inputRequests ?? {}).toEqual({}); // no URL elicitation declared: state only
    const state = asked.requestState as string;
    const pending = await nextPending();
    await first.close();

    const second = await connect("modern-second", manual);
    const altered = `${state.slice(0, -2)}${state.endsWith("A") ? "B" : "A"}A`;
    for (const params of [
      { arguments: entity("Babbage"), requestState: altered },
      { arguments: entity("Someone else"), requestState: state },
    ]) {
      const err = await call(second, params).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as ProtocolError).code).toBe(-32602);
      expect((err as Error).message).toContain("requestState");
    }
    await s.decide(pending.approval_id, "approve");
    const done = await call(second, { arguments: entity("Babbage"), requestState: state });
    expect(done.resultType).toBeUndefined(); // the client consumed resultType "complete"
    expect(done.isError).toBeFalsy();
    expect(JSON.stringify(done.content)).toContain("Babbage");
    const stored = await s.storedChain(pending.chain_id);
    expect(stored.events).toHaveLength(1);
    // Delivered: the same state again names no wait any more (the call is not decided anew).
    const late = await call(second, { arguments: entity("Babbage"), requestState: state });
    expect(late.isError).toBe(true);
    expect(late._meta).toMatchObject({ "tollgate.dev/error_code": "NOT_FOUND" });
    expect((await receiptOf(pending.chain_id)).events_summary).toHaveLength(1);
    await second.close();
  });

  it("on the wire: header and envelope checks answer 400 with the revision's codes; notifications 202", async () => {
    const v = "2026-07-28";
    const envelope = (version = v) => ({
      "io.modelcontextprotocol/protocolVersion": version,
      "io.modelcontextprotocol/clientCapabilities": {},
    });
    const post = async (headers: Record<string, string>, body: unknown) => {
      const r = await fetch(mcpUrl, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", ...headers },
        body: JSON.stringify(body),
      });
      const answer = (await r.json().catch(() => null)) as {
        result?: Record<string, unknown>;
        error?: { code: number; data?: unknown };
      } | null;
      return { status: r.status, body: answer };
    };
    const std = (method: string, name?: string, version = v) => ({
      "mcp-protocol-version": version,
      "mcp-method": method,
      ...(name !== undefined && { "mcp-name": name }),
    });
    const call = (name: string, version = v) => ({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name, arguments: { query: "x" }, _meta: envelope(version) },
    });
    // Allowed, with every header right (Mcp-Name base64-encoded works too).
    const ok = await post(std("tools/call", "search_nodes"), call("search_nodes"));
    expect(ok.status).toBe(200);
    expect(ok.body?.result).toMatchObject({ resultType: "complete" });
    expect(ok.body?.result?.isError).toBeFalsy();
    const b64 = `=?base64?${Buffer.from("search_nodes").toString("base64")}?=`;
    expect((await post(std("tools/call", b64), call("search_nodes"))).status).toBe(200);
    for (const [headers, body, status, code] of [
      [std("tools/call", "read_graph"), call("search_nodes"), 400, -32020], // Mcp-Name ≠ params.name
      [std("tools/list", "search_nodes"), call("search_nodes"), 400, -32020], // Mcp-Method ≠ method
      [{ "mcp-method": "tools/call", "mcp-name": "search_nodes" }, call("search_nodes"), 400, -32020],
      [std("tools/call", "search_nodes", "2026-07-29"), call("search_nodes"), 400, -32020], // header ≠ _meta
      [std("tools/call", "search_nodes", "2027-01-01"), call("search_nodes", "2027-01-01"), 400, -32022],
      [std("tools/list"), { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, 400, -32602],
      [
        std("tools/list"),
        { jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: envelope(), cursor: "c" } },
        200,
        -32602,
      ],
      [
        std("prompts/list"),
        { jsonrpc: "2.0", id: 4, method: "prompts/list", params: { _meta: envelope() } },
        200,
        -32601,
      ],
      [std("tools/call", "no_such_tool"), call("no_such_tool"), 200, -32602],
    ] as const) {
      const r = await post(headers, body);
      expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status, code });
    }
    const unsupported = await post(
      std("tools/call", "search_nodes", "2027-01-01"),
      call("search_nodes", "2027-01-01"),
    );
    expect(unsupported.body?.error?.data).toEqual({ supported: [v], requested: "2027-01-01" });
    const note = await post(
      {},
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { _meta: envelope(), requestId: 1 } },
    );
    expect(note.status).toBe(202);
    // An envelope-less server/discover (curl) is answered too.
    const discover = await post({}, { jsonrpc: "2.0", id: 5, method: "server/discover" });
    expect(discover.body?.result).toMatchObject({ supportedVersions: [v], capabilities: { tools: {} } });
  });

  it("a 2025-era client (SDK 1.x, initialize) keeps its session on the same endpoint", async () => {
    const client = new LegacyClient({ name: "legacy-agent", version: "1.0.0" });
    const transport = new LegacyTransport(mcpUrl);
    await client.connect(transport);
    expect(transport.sessionId).toEqual(expect.any(String));
    const r = await client.callTool({ name: "search_nodes", arguments: { query: "Lovelace" } });
    expect(r.isError).toBeFalsy();
    expect(JSON.stringify(r.content)).toContain("Lovelace");
    await transport.terminateSession();
    await client.close();
    const receipt = await receiptOf(chainOf(r));
    expect(receipt.metadata).toMatchObject({ mcp_client: "legacy-agent/1.0.0" });
  });
});
