/**
 * Progress in the modern era (MCP 2026-07-28) of the MCP face: a tools/call retry that carries
 * `_meta.progressToken` and is held while its approval is pending gets notifications/progress
 * on a Server-Sent Events answer (TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS apart), and the real
 * result as the stream's last event once the approval is granted; without a token the answer
 * is plain JSON. Raw HTTP, as a client sees the wire. Real service, real server-memory upstream.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryUpstream, nextPendingApproval, reviewNewMemories, type Stack, startStack } from "./harness.js";

const V = "2026-07-28";

describe("MCP face, modern era: progress while a retry is held", () => {
  let s: Stack;
  let dir: string;
  let mcpUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-mcp-progress-"));
    s = await startStack({
      slug: "mcp-progress-org",
      config: { mcpUpstream: "memory", agentName: "assistant", mcpProgressIntervalSeconds: 0.2 },
      upstreams: [memoryUpstream(dir)],
    });
    mcpUrl = `${s.sidecar.httpUrl}/mcp`;
    await reviewNewMemories(s, "mcp-progress-org");
  }, 600_000);
  afterAll(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const post = (id: number, params: Record<string, unknown>) =>
    fetch(mcpUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": V,
        "mcp-method": "tools/call",
        "mcp-name": "create_entities",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params }),
    });
  const args = { entities: [{ name: "Grace", entityType: "person", observations: ["compiled"] }] };
  const meta = (extra: Record<string, unknown> = {}) => ({
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
    ...extra,
  });

  it("the held retry streams notifications/progress, then the result once approved", async () => {
    const first = await post(1, { name: "create_entities", arguments: args, _meta: meta() });
    expect(first.headers.get("content-type")).toMatch(/application\/json/);
    const state = ((await first.json()) as { result: { resultType: string; requestState: string } }).result;
    expect(state.resultType).toBe("input_required");

    const retry = await post(2, {
      name: "create_entities",
      arguments: args,
      requestState: state.requestState,
      _meta: meta({ progressToken: "p-1" }),
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = retry.body!.pipeThrough(new TextDecoderStream()).getReader();
    const events: Record<string, unknown>[] = [];
    let buffered = "";
    let approved = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      let end = buffered.indexOf("\n\n");
      while (end >= 0) {
        const data = buffered
          .slice(0, end)
          .split("\n")
          .find((l) => l.startsWith("data: "));
        if (data) events.push(JSON.parse(data.slice(6)));
        buffered = buffered.slice(end + 2);
        end = buffered.indexOf("\n\n");
      }
      // Approve once two progress notifications arrived (the call is held meanwhile).
      if (!approved && events.filter((e) => e.method === "notifications/progress").length >= 2) {
        approved = true;
        const pending = await nextPendingApproval(s, new Set());
        await s.decide(pending.approval_id, "approve");
      }
    }
    const progress = events.filter((e) => e.method === "notifications/progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => (p.params as { progress: number }).progress)).toEqual(
      progress.map((_, i) => i + 1),
    );
    expect(progress[0]!.params).toMatchObject({
      progressToken: "p-1",
      message: expect.stringMatching(/held/),
    });
    const last = events.at(-1) as { id: number; result: { resultType: string; isError?: boolean } };
    expect(last.id).toBe(2);
    expect(last.result.resultType).toBe("complete");
    expect(last.result.isError).toBeFalsy();
  });

  it("a request without a progressToken is answered as plain JSON", async () => {
    const r = await fetch(mcpUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": V,
        "mcp-method": "tools/list",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: meta() } }),
    });
    expect(r.headers.get("content-type")).toMatch(/application\/json/);
    expect(((await r.json()) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(0);
  });
});
