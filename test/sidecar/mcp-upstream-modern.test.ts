/**
 * Modern MCP upstreams (revision 2026-07-28), built with the official @modelcontextprotocol/server
 * 2.x, mirrored by the sidecar: over Streamable HTTP (a modern-only endpoint that refuses the
 * legacy era) and over stdio (`serveStdio`). The sidecar negotiates as the SDKs do (a
 * server/discover probe, no initialize), lists the tools, and forwards each tools/call with the
 * per-request `_meta` protocol version and the `Mcp-Method`/`Mcp-Name` headers; clients of both
 * eras of the face and gRPC Invoke reach the tools. The legacy upstreams (server-memory) are
 * covered by mcp.test.ts and the other MCP tests.
 */
import * as grpc from "@grpc/grpc-js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectFailure, type Stack, startStack } from "./harness.js";
import { type ModernUpstream, modernServerEntry, startModernUpstream } from "./modern-upstream.js";

const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion";

describe.each(["streamable_http", "stdio"] as const)("a modern MCP upstream over %s", (transport) => {
  let s: Stack;
  let upstream: ModernUpstream | null = null;

  beforeAll(async () => {
    if (transport === "streamable_http") upstream = await startModernUpstream();
    s = await startStack({
      slug: `mcp-modern-upstream-${transport.replace("_", "-")}`,
      config: { mcpUpstream: "modern", agentName: "assistant" },
      upstreams: [
        upstream
          ? { name: "modern", type: "mcp", transport: "streamable_http", url: upstream.url, timeout_ms: 3000 }
          : {
              name: "modern",
              type: "mcp",
              transport: "stdio",
              command: process.execPath,
              args: [modernServerEntry, "stdio"],
              timeout_ms: 3000,
            },
      ],
    });
  }, 600_000);
  afterAll(async () => {
    await s?.close();
    await upstream?.close();
  });

  const mcpUrl = () => new URL(`${s.sidecar.httpUrl}/mcp`);
  const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]?.text;

  it("gRPC Invoke reaches the modern tool, which saw the 2026-07-28 envelope; a tool error and an input_required are the tool's error, no answer a timeout", async () => {
    const chainId = await s.openChain("modern-upstream");
    const r = await s.invoke({
      chain_id: chainId,
      action_name: "add",
      payload: { a: 2, b: 3 },
      upstream: "modern",
    });
    const result = JSON.parse(r.result_json);
    expect(text(result)).toBe("5");
    expect(result.structuredContent.envelope[PROTOCOL_VERSION_KEY]).toBe("2026-07-28");
    expect(result.structuredContent.envelope["io.modelcontextprotocol/clientInfo"]).toMatchObject({
      name: "tollgate-sidecar",
    });
    const failed = await s.invoke({
      chain_id: chainId,
      action_name: "fail",
      payload: {},
      upstream: "modern",
    });
    expect(failed.upstream_error).toBe(true);
    expect(text(JSON.parse(failed.result_json))).toMatch(/failed on purpose/);
    // A tool that asks for input: the sidecar declares no elicitation (nobody there could
    // answer), so the server refuses (-32021 MissingRequiredClientCapability): the tool's error.
    const asked = await s.invoke({
      chain_id: chainId,
      action_name: "confirm",
      payload: {},
      upstream: "modern",
    });
    expect(asked.upstream_error).toBe(true);
    expect(JSON.parse(asked.result_json).error.code).toBe(-32021);
    // No answer within the upstream's timeout_ms: UNAVAILABLE, UPSTREAM_TIMEOUT.
    const hung = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "hang", payload: {}, upstream: "modern" }),
    );
    expect(hung.code).toBe(grpc.status.UNAVAILABLE);
    expect(hung.errorCode).toBe("UPSTREAM_TIMEOUT");
    await s.rpc("CompleteChain", { chain_id: chainId });
  });

  it("the MCP face mirrors its tools to a legacy client and a modern client", async () => {
    const legacy = new LegacyClient({ name: "legacy-agent", version: "1.0.0" });
    await legacy.connect(new LegacyTransport(mcpUrl()));
    expect((await legacy.listTools()).tools.map((t) => t.name).sort()).toEqual([
      "add",
      "confirm",
      "fail",
      "hang",
    ]);
    expect(text(await legacy.callTool({ name: "add", arguments: { a: 1, b: 2 } }))).toBe("3");
    await legacy.close();

    const modern = new Client(
      { name: "modern-agent", version: "1.0.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    await modern.connect(new StreamableHTTPClientTransport(mcpUrl()));
    expect(modern.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect((await modern.listTools()).tools.map((t) => t.name).sort()).toEqual([
      "add",
      "confirm",
      "fail",
      "hang",
    ]);
    expect(text(await modern.callTool({ name: "add", arguments: { a: 20, b: 22 } }))).toBe("42");
    await modern.close();

    // mcp.server.operation.duration (OTel MCP conventions), one series per era of the face.
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    const count = (labels: string) =>
      Number(
        new RegExp(`^mcp_server_operation_duration_seconds_count\\{${labels}\\} (\\d+)$`, "m").exec(
          metrics,
        )?.[1] ?? 0,
      );
    expect(
      count(
        'mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",gen_ai_tool_name="add",error_type=""',
      ),
    ).toBe(1);
    expect(
      count(
        'mcp_method_name="tools/call",mcp_protocol_version="2026-07-28",gen_ai_tool_name="add",error_type=""',
      ),
    ).toBe(1);
    expect(
      count(
        'mcp_method_name="tools/list",mcp_protocol_version="2026-07-28",gen_ai_tool_name="",error_type=""',
      ),
    ).toBe(1);
    expect(metrics).toMatch(
      /^mcp_server_operation_duration_seconds_bucket\{le="300",mcp_method_name="tools\/list",mcp_protocol_version="2025-11-25"/m,
    );
  });

  it("a tool error result is error.type tool_error; an unknown tool its JSON-RPC code", async () => {
    const modern = new Client(
      { name: "modern-agent", version: "1.0.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    await modern.connect(new StreamableHTTPClientTransport(mcpUrl()));
    expect((await modern.callTool({ name: "fail", arguments: {} })).isError).toBe(true);
    await expect(modern.callTool({ name: "nope", arguments: {} })).rejects.toThrow(/Unknown tool/);
    await modern.close();
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /^mcp_server_operation_duration_seconds_count\{mcp_method_name="tools\/call",mcp_protocol_version="2026-07-28",gen_ai_tool_name="fail",error_type="tool_error"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^mcp_server_operation_duration_seconds_count\{mcp_method_name="tools\/call",mcp_protocol_version="2026-07-28",gen_ai_tool_name="nope",error_type="-32602"\} 1$/m,
    );
  });

  // HTTP only (headers exist there): registered for that transport only, never reported skipped.
  if (transport === "streamable_http")
    it("on HTTP: discovered, never initialized; every tools/call carries Mcp-Method, Mcp-Name and the envelope", () => {
      const seen = upstream!.seen.filter((r) => r.httpMethod === "POST");
      const methods = seen.map((r) => r.body?.method);
      expect(methods[0]).toBe("server/discover");
      expect(methods).not.toContain("initialize");
      expect(seen.every((r) => r.headers["mcp-session-id"] === undefined)).toBe(true);
      const calls = seen.filter((r) => r.body?.method === "tools/call");
      expect(calls.length).toBeGreaterThanOrEqual(4);
      for (const c of calls) {
        expect(c.headers["mcp-method"]).toBe("tools/call");
        expect(c.headers["mcp-name"]).toBe(c.body?.params?.name);
        expect(c.headers["mcp-protocol-version"]).toBe("2026-07-28");
        expect((c.body?.params?._meta as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_KEY]).toBe(
          "2026-07-28",
        );
      }
      const lists = seen.filter((r) => r.body?.method === "tools/list");
      expect(lists.length).toBeGreaterThan(0);
      for (const l of lists) expect(l.headers["mcp-method"]).toBe("tools/list");
    });
});
