/**
 * Approval waits through the MCP face with the real clients (issue 21): the TypeScript
 * @modelcontextprotocol/sdk Client over StreamableHTTPClientTransport and the Python `mcp`
 * package from PyPI (test/sidecar/python/mcp_wait_client.py, run with the venv of
 * scripts/python-env.sh), each (a) with progress notifications, (b) with a task-augmented call,
 * (c) retrying after request timeouts — all completing an approval granted after 8 s. Plus task
 * cancellation, idle session expiry with a receipt, Origin validation, unknown tools, inputSchema
 * refusals and invalid cursors. Real service on real PostgreSQL, real server-memory upstream.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  nextPendingApproval,
  type Stack,
  startMemoryStack,
  toolFromScript,
  waitForApprovalStatus,
  waitForReceipt,
} from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const here = path.dirname(fileURLToPath(import.meta.url));
/** Approvals are granted this long after the call's approval became pending (the client waits). */
const APPROVE_AFTER_MS = 8000;

describe("approval waits through the MCP face", () => {
  let s: Stack;
  let mcpUrl: URL;
  let python: string;
  const seen = new Set<string>();

  beforeAll(async () => {
    python = toolFromScript("python-env.sh");
    s = await startMemoryStack("mcp-wait-org", {
      mcpProgressIntervalSeconds: 1,
      mcpSessionIdleSeconds: 4,
      servicePublicUrl: "https://tollgate.example.com/",
    });
    mcpUrl = new URL(`${s.sidecar.httpUrl}/mcp`);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  /**
   * Waits for an approval not seen before, grants it APPROVE_AFTER_MS after seeing it pending
   * (not after the test started: a Python client takes seconds to start on a loaded machine);
   * pushes "approve sent" to `order` (the caller's log of what happened) just before sending it.
   */
  async function approveAfterWaiting(order: string[] = []): Promise<string> {
    for (;;) {
      const fresh = (await s.pendingApprovals()).find((a) => !seen.has(a.approval_id));
      if (fresh) {
        seen.add(fresh.approval_id);
        await sleep(APPROVE_AFTER_MS);
        order.push("approve sent");
        await s.decide(fresh.approval_id, "approve");
        return fresh.approval_id;
      }
      await sleep(50);
    }
  }
  /** Waits for an approval not seen before and returns it (left pending). */
  const nextPending = () => nextPendingApproval(s, seen);
  const entity = (name: string) => ({
    entities: [{ name, entityType: "person", observations: ["reviewed"] }],
  });
  const reviewUrl = (id: string) => `https://tollgate.example.com/dashboard/approvals#approval-${id}`;
  const connect = async (name: string, capabilities: ConstructorParameters<typeof Client>[1] = {}) => {
    const client = new Client({ name, version: "1.0.0" }, capabilities);
    const transport = new StreamableHTTPClientTransport(mcpUrl);
    await client.connect(transport);
    return { client, transport };
  };
  const graphHas = async (client: Client, name: string) => {
    const r = await client.callTool({ name: "search_nodes", arguments: { query: name } });
    return JSON.stringify(r.content).includes(name);
  };

  it("TypeScript client, 3 s timeout with resetTimeoutOnProgress: progress names the approval; URL elicitation is information only", async () => {
    const elicitations: Record<string, unknown>[] = [];
    const { client, transport } = await connect("ts-progress", {
      capabilities: { elicitation: { url: {} } },
    });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      elicitations.push(req.params as Record<string, unknown>);
      return { action: "decline" }; // declining changes nothing: the approver decides
    });
    const progress: Progress[] = [];
    const order: string[] = [];
    const approval = approveAfterWaiting(order);
    const result = await client.callTool(
      { name: "create_entities", arguments: entity("Ada") },
      CallToolResultSchema,
      {
        timeout: 3000,
        resetTimeoutOnProgress: true,
        onprogress: (p) => progress.push(p),
      },
    );
    order.push("result");
    const approvalId = await approval;
    // The call outlived its 3 s timeout on progress alone and ended only after the approval.
    expect(order).toEqual(["approve sent", "result"]);
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain("Ada");
    // Repeated while it waited: a 3 s timeout outlived an 8 s wait only by being reset.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]!.message).toContain(approvalId);
    expect(progress[0]!.message).toContain(reviewUrl(approvalId));
    expect(progress.map((p) => p.progress)).toEqual(
      [...progress.map((p) => p.progress)].sort((a, b) => a - b),
    );
    expect(elicitations).toEqual([
      expect.objectContaining({ mode: "url", elicitationId: approvalId, url: reviewUrl(approvalId) }),
    ]);
    expect(await graphHas(client, "Ada")).toBe(true);
    await transport.terminateSession();
    await client.close();
  });

  it("TypeScript client, task-augmented call: the task returns at once, survives a reconnect, and ends with the result", async () => {
    const { client, transport } = await connect("ts-task");
    const order: string[] = [];
    const approval = approveAfterWaiting(order);
    const messages: { type: string; status?: string; statusMessage?: string; ttl?: number | null }[] = [];
    let result: unknown = null;
    let taskId = "";
    let reconnected: Client | null = null;
    for await (const m of client.experimental.tasks.callToolStream(
      { name: "create_entities", arguments: entity("Grace") },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      if (m.type === "taskCreated") {
        taskId = m.task.taskId;
        messages.push({ type: m.type, status: m.task.status, ttl: m.task.ttl });
        order.push("task created"); // at once, not after the approval
        // A second connection of the same session finds the task (results survive reconnects).
        const again = new StreamableHTTPClientTransport(mcpUrl, { sessionId: transport.sessionId });
        reconnected = new Client({ name: "ts-task", version: "1.0.0" });
        await reconnected.connect(again);
      }
      if (m.type === "taskStatus")
        messages.push({ type: m.type, status: m.task.status, statusMessage: m.task.statusMessage });
      if (m.type === "result") {
        order.push("result");
        result = m.result;
      }
      if (m.type === "error") throw m.error;
    }
    const approvalId = await approval;
    expect(order).toEqual(["task created", "approve sent", "result"]);
    expect(messages[0]).toMatchObject({ type: "taskCreated", status: "working" });
    expect(messages[0]!.ttl).toBeGreaterThanOrEqual(24 * 3600_000); // covers the approval timeout
    expect(messages).toContainEqual(
      expect.objectContaining({
        status: "working",
        statusMessage: expect.stringContaining(reviewUrl(approvalId)),
      }),
    );
    expect(messages.at(-1)).toMatchObject({ status: "completed" });
    expect(JSON.stringify(result)).toContain("Grace");
    // The completed task no longer says it waits for approval (issue 29).
    const final = await client.experimental.tasks.getTask(taskId);
    expect(final).toMatchObject({ status: "completed", statusMessage: "Completed" });
    const viaReconnect = await reconnected!.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(JSON.stringify(viaReconnect.content)).toContain("Grace");
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(taskId);
    await expect(client.experimental.tasks.listTasks("not-a-cursor")).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
    await transport.terminateSession();
    await client.close();
  });

  it("TypeScript client retrying after request timeouts re-attaches; another call meanwhile names the approval", async () => {
    const { client, transport } = await connect("ts-retry");
    const approval = approveAfterWaiting();
    const attempts: string[] = [];
    let other: Awaited<ReturnType<Client["callTool"]>> | null = null;
    let result: Awaited<ReturnType<Client["callTool"]>> | null = null;
    while (!result) {
      try {
        result = await client.callTool(
          { name: "create_entities", arguments: entity("Hopper") },
          CallToolResultSchema,
          {
            timeout: 3000,
          },
        );
        attempts.push("result");
      } catch (err) {
        expect(err).toBeInstanceOf(McpError);
        expect((err as McpError).code).toBe(ErrorCode.RequestTimeout);
        attempts.push("timeout");
        other ??= await client.callTool({ name: "search_nodes", arguments: { query: "x" } });
      }
    }
    const approvalId = await approval;
    expect(attempts.filter((a) => a === "timeout").length).toBeGreaterThanOrEqual(2);
    expect(attempts.at(-1)).toBe("result");
    expect(result.isError).toBeFalsy();
    expect(other?.isError).toBe(true);
    expect(JSON.stringify(other?.content)).toContain(approvalId);
    expect(other?._meta).toMatchObject({
      "tollgate.dev/error_code": "APPROVAL_PENDING",
      "tollgate.dev/approval": { approval_id: approvalId, review_url: reviewUrl(approvalId) },
    });
    // Forwarded exactly once although the call was sent several times.
    const graph = await client.callTool({ name: "read_graph", arguments: {} });
    expect(JSON.stringify(graph.content).match(/Hopper/g)).toHaveLength(1);
    await transport.terminateSession();
    await client.close();
  });

  it("tasks/cancel withdraws the waiting call and its approval: never forwarded, not decidable, the chain goes on", async () => {
    const { client, transport } = await connect("ts-cancel");
    const created = await client.request(
      {
        method: "tools/call",
        params: { name: "create_entities", arguments: entity("Withdrawn"), task: { ttl: 60_000 } },
      },
      (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema,
    );
    const pending = await nextPending();
    const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
    expect(cancelled.status).toBe("cancelled");
    // Withdrawn at the service: cancelled, its event denied, the chain open for more actions.
    const stored = await waitForApprovalStatus(s, pending.approval_id, "cancelled");
    expect(stored.decided_by).toMatch(/^api-key:/);
    await s.decide(pending.approval_id, "approve").then(
      () => {
        throw new Error("a cancelled approval must not be decidable");
      },
      () => undefined,
    );
    expect(await graphHas(client, "Withdrawn")).toBe(false);
    // The session goes on in the same chain.
    const next = await client.callTool({ name: "search_nodes", arguments: { query: "Ada" } });
    expect(next.isError).toBeFalsy();
    const chain = await s.storedChain(pending.chain_id);
    expect(chain.status).toBe("open");
    expect(chain.events.map((e) => e.action_name)).toEqual(
      expect.arrayContaining(["create_entities", "search_nodes"]),
    );
    expect(chain.events.find((e) => e.action_name === "create_entities")?.decision).toMatchObject({
      policy_decision: "deny",
      decision_reason: "Withdrawn by the caller: the MCP client cancelled the task",
    });
    await transport.terminateSession();
    await client.close();
  });

  it.each(["progress", "task", "retry"] as const)(
    "Python mcp client (%s) completes an approval granted after 8 s",
    async (mode) => {
      const name = `Py-${mode}`;
      const order: string[] = [];
      const approval = approveAfterWaiting(order);
      const out = await runPython(python, [
        path.join(here, "python/mcp_wait_client.py"),
        mcpUrl.href,
        mode,
        "create_entities",
        JSON.stringify(entity(name)),
      ]);
      order.push("result");
      const approvalId = await approval;
      // The client's result came after the approval was sent, not before.
      expect(order).toEqual(["approve sent", "result"]);
      expect(out.protocol_version).toBe("2025-11-25");
      expect(JSON.stringify(out.result)).toContain(name);
      expect((out.result as { isError?: boolean }).isError).toBeFalsy();
      if (mode === "progress") {
        const progress = out.progress as { progress: number; message: string }[];
        // Repeated while it waited (how often is the sidecar's interval, not asserted), increasing.
        expect(progress.length).toBeGreaterThanOrEqual(2);
        expect(progress.every((p, i) => i === 0 || p.progress > progress[i - 1]!.progress)).toBe(true);
        expect(progress[0]!.message).toContain(reviewUrl(approvalId));
      }
      if (mode === "task") {
        expect(out.created).toMatchObject({ status: "working" });
        // Polled while still waiting for the approver: the task came back before the decision.
        expect(out.statuses).toContainEqual({
          status: "working",
          message: expect.stringContaining(reviewUrl(approvalId)),
        });
        expect(out.listed).toContain(out.task_id);
      }
      if (mode === "retry") {
        const attempts = out.attempts as string[];
        // At least one read timeout, then a retry that re-attached and got the result.
        expect(attempts.length).toBeGreaterThanOrEqual(2);
        expect(attempts.slice(0, -1).every((a) => a.startsWith("error"))).toBe(true);
        expect(attempts.at(-1)).toBe("result");
      }
    },
    60_000,
  );

  it("an idle session expires and its chain gets its receipt; the gauge counts sessions", async () => {
    const { client } = await connect("idle-agent");
    const r = await client.callTool({ name: "search_nodes", arguments: { query: "Ada" } });
    expect(r.isError).toBeFalsy();
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_sidecar_mcp_sessions [1-9]/);
    expect(metrics).toMatch(/tollgate_sidecar_open_chains [1-9]/);
    const chainId = (r._meta as Record<string, string>)["tollgate.dev/chain_id"]!;
    expect(chainId).toMatch(/^[0-9a-f-]{36}$/);
    // No request for mcpSessionIdleSeconds (4 s): the session ends, its chain is completed.
    const receipt = await waitForReceipt(s, chainId, 15_000);
    expect(receipt.metadata).toMatchObject({ mcp_client: "idle-agent/1.0.0" });
    expect(receipt.events_summary.map((e) => e.action_name)).toEqual(["search_nodes"]);
    await expect(client.callTool({ name: "search_nodes", arguments: { query: "Ada" } })).rejects.toThrow();
    await client.close();
  }, 30_000);

  it("refuses a foreign Origin with 403, allows local ones and requests without Origin", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "browser", version: "1" },
      },
    };
    const post = (origin?: string) =>
      fetch(mcpUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(origin && { origin }),
        },
        body: JSON.stringify(init),
      });
    const foreign = await post("https://evil.example");
    expect(foreign.status).toBe(403);
    expect(s.sidecar.readiness().ready).toBe(true);
    expect((await post("http://localhost:5173")).status).toBe(200);
    expect((await post()).status).toBe(200);
  });

  it("unknown tool is -32602 and nothing is recorded; arguments failing inputSchema are refused before governance", async () => {
    const { client, transport } = await connect("strict-agent");
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
    const bad = await client.callTool({ name: "create_entities", arguments: { entities: "not a list" } });
    expect(bad.isError).toBe(true);
    expect(bad._meta).toMatchObject({ "tollgate.dev/error_code": "INVALID_ARGUMENT" });
    expect(await s.pendingApprovals().then((a) => a.filter((x) => !seen.has(x.approval_id)))).toEqual([]);
    await expect(client.listTools({ cursor: "bogus" })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
    });
    // Neither refusal reached the service: the session's chain holds only the next call.
    const ok = await client.callTool({ name: "search_nodes", arguments: { query: "Ada" } });
    const chainId = (ok._meta as Record<string, string>)["tollgate.dev/chain_id"]!;
    const stored = await s.storedChain(chainId);
    expect(stored.events.map((e) => e.action_name)).toEqual(["search_nodes"]);
    await transport.terminateSession();
    await client.close();
  });
});

function runPython(python: string, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      args,
      { timeout: 50_000, env: { ...process.env, PYTHONWARNINGS: "ignore" } },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`python failed: ${err.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>);
        } catch {
          reject(new Error(`python printed no JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}
