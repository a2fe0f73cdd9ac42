/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, ext-tasks specification 2026-07-28) on
 * the modern MCP face. The extension's official requester (@modelcontextprotocol/ext-tasks
 * 0.2.x) settles an approved call; the other cases drive the wire as it does (the official
 * client 2.x refuses `resultType: "task"` on tools/call, so its host dispatch is a plain POST
 * with the envelope and standard headers, `raw` below). Real service, sidecar and server-memory
 * upstream; approvals decided over the service's HTTP API.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../sidecar/config.js";
import { startSidecar } from "../../sidecar/sidecar.js";
import { nextPendingApproval, type Stack, startMemoryStack, waitForApprovalStatus } from "./harness.js";

const TASKS = "io.modelcontextprotocol/tasks";
/** An SEP-2243 header value: base64-wrapped unless printable ASCII. */
const headerValue = (v: string) =>
  /^[\x20-\x7e]*$/.test(v) ? v : `=?base64?${Buffer.from(v).toString("base64")}?=`;
type Loose = Record<string, unknown>;

describe("MCP face, tasks extension (2026-07-28)", () => {
  let s: Stack;
  let mcpUrl: URL;
  const seen = new Set<string>();

  beforeAll(async () => {
    s = await startMemoryStack("mcp-modern-tasks-org", { servicePublicUrl: "https://tollgate.example.com/" });
    mcpUrl = new URL(`${s.sidecar.httpUrl}/mcp`);
  }, 600_000);
  afterAll(async () => {
    await s?.close();
  });

  const reviewUrl = (id: string) => `https://tollgate.example.com/dashboard/approvals#approval-${id}`;
  const entity = (name: string) => ({
    entities: [{ name, entityType: "person", observations: ["reviewed"] }],
  });
  /** The capabilities each client declared (sent in the envelope of `raw`). */
  const declared = new WeakMap<Client, Record<string, unknown>>();
  const connect = async (
    name: string,
    capabilities: Record<string, unknown> = { extensions: { [TASKS]: {} } },
    url = mcpUrl,
  ) => {
    const client = new Client(
      { name, version: "1.0.0" },
      { capabilities, versionNegotiation: { mode: "auto" } },
    );
    await client.connect(new StreamableHTTPClientTransport(url));
    expect(client.getProtocolEra()).toBe("modern");
    declared.set(client, capabilities);
    return client;
  };
  /**
   * One modern JSON-RPC request over HTTP, as the official client frames it (envelope, standard
   * headers): the client's codec refuses `resultType: "task"` on tools/call, so the task wire is
   * driven directly. Resolves the result; rejects with the JSON-RPC error ({code, message}).
   */
  let nextId = 1;
  const raw = async (c: Client | Loose, method: string, params: Loose, url = mcpUrl): Promise<Loose> => {
    const capabilities = c instanceof Client ? declared.get(c) : c;
    const name = (params.name ?? params.taskId) as string | undefined;
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        ...(name !== undefined && { "mcp-name": headerValue(name) }),
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: nextId++,
        method,
        params: {
          ...params,
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "tasks-test", version: "1.0.0" },
            "io.modelcontextprotocol/clientCapabilities": capabilities,
          },
        },
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result?: Loose; error?: { code: number; message: string } };
    if (body.error) throw Object.assign(new Error(body.error.message), body.error);
    return body.result!;
  };
  const createEntities = (c: Client, name: string) =>
    raw(c, "tools/call", { name: "create_entities", arguments: entity(name) });
  const getTask = (c: Client, taskId: string) => raw(c, "tasks/get", { taskId });
  /** Polls tasks/get (at the task's pollIntervalMs) until the task is terminal. */
  const settled = async (c: Client, taskId: string) => {
    for (;;) {
      const t = await getTask(c, taskId);
      if (["completed", "failed", "cancelled"].includes(t.status as string)) return t;
      await new Promise((r) => setTimeout(r, t.pollIntervalMs as number));
    }
  };
  const graphHas = async (c: Client, name: string) => {
    const r = await c.callTool({ name: "search_nodes", arguments: { query: name } });
    return JSON.stringify(r.content).includes(name);
  };
  const protocolError = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error("expected a JSON-RPC error");
      },
      (e: unknown) => {
        expect(typeof (e as { code?: unknown }).code).toBe("number");
        return e as { code: number; message: string };
      },
    );

  it("discover names the extension; an allowed call is answered at once, not as a task", async () => {
    const c = await connect("tasks-discover");
    const d = await raw(c, "server/discover", {});
    expect(d.capabilities).toMatchObject({ extensions: { [TASKS]: {} } });
    const r = await raw(c, "tools/call", { name: "search_nodes", arguments: { query: "nobody" } });
    expect(r.resultType).not.toBe("task");
    expect(r.isError).toBeFalsy();
    await c.close();
  });

  it("approval: a task (input_required with the review URL), kept across reconnection; after the approval tasks/get returns the result and the tool ran once", async () => {
    const first = await connect("tasks-approve", { extensions: { [TASKS]: {} }, elicitation: { url: {} } });
    const handle = await createEntities(first, "Hopper");
    expect(handle).toMatchObject({
      resultType: "task",
      taskId: expect.stringMatching(/^[0-9a-f]{32}$/),
      status: "input_required",
      ttlMs: expect.any(Number),
      pollIntervalMs: expect.any(Number),
    });
    const taskId = handle.taskId as string;
    const pending = await nextPendingApproval(s, seen);
    expect(handle.statusMessage).toContain(reviewUrl(pending.approval_id));
    const asked = await getTask(first, taskId);
    expect(asked).toMatchObject({ resultType: "complete", taskId, status: "input_required" });
    expect(asked.inputRequests).toEqual({
      review: {
        method: "elicitation/create",
        params: expect.objectContaining({ mode: "url", url: reviewUrl(pending.approval_id) }),
      },
    });
    await first.close(); // the task lives on in the sidecar

    const second = await connect("tasks-approve-again", { extensions: { [TASKS]: {} } });
    expect(
      await raw(second, "tasks/update", { taskId, inputResponses: { review: { action: "accept" } } }),
    ).toMatchObject({ resultType: "complete" });
    const working = await getTask(second, taskId);
    expect(working).toMatchObject({ status: "working" });
    expect(working.inputRequests).toBeUndefined();
    expect(await graphHas(second, "Hopper")).toBe(false);
    await s.decide(pending.approval_id, "approve");
    const done = await settled(second, taskId);
    expect(done.status).toBe("completed");
    const result = done.result as Loose;
    expect(result.isError).toBeFalsy();
    expect(JSON.stringify(result.content)).toContain("Hopper");
    expect(result._meta).toMatchObject({ "tollgate.dev/chain_id": pending.chain_id });
    // Forwarded once: one event with one success outcome, one entity in the graph.
    const stored = await s.storedChain(pending.chain_id);
    expect(stored.events).toHaveLength(1);
    expect(stored.events[0]).toMatchObject({ outcome: { status: "success" } });
    const graph = await second.callTool({ name: "read_graph", arguments: {} });
    expect(JSON.stringify(graph.content).match(/Hopper/g)).toHaveLength(1);
    // Polling again gives the same terminal task; cancelling it changes nothing.
    await raw(second, "tasks/cancel", { taskId });
    expect(await getTask(second, taskId)).toMatchObject({ status: "completed" });
    await second.close();
  });

  it("the extension's own requester (@modelcontextprotocol/ext-tasks) settles an approved call", async () => {
    const c = await connect("tasks-requester");
    const session = createTaskSessionFromClient(c, {
      endpointId: "tollgate-sidecar",
      rawDispatch: async (request) => {
        const r = request as { method: string; params: Loose };
        try {
          return { kind: "result", result: (await raw(c, r.method, r.params)) as never };
        } catch (e) {
          return { kind: "error", error: e as never };
        }
      },
      v2RequestFraming: {
        protocolVersion: "2026-07-28",
        clientInfo: { name: "tasks-requester", version: "1.0.0" },
        clientCapabilities: { extensions: { [TASKS]: {} } },
      },
    });
    const execution = await session.callTool("create_entities", entity("Requested"));
    expect(execution.kind).toBe("task");
    const pending = await nextPendingApproval(s, seen);
    await s.decide(pending.approval_id, "approve");
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome) as Loose;
    expect(JSON.stringify(result.content)).toContain("Requested");
    expect((await s.storedChain(pending.chain_id)).events).toHaveLength(1);
    await session.close();
    await c.close();
  });

  it("denial: the task completes with the refusal (isError), the tool never ran", async () => {
    const c = await connect("tasks-deny");
    const handle = await createEntities(c, "Denied");
    expect(handle).toMatchObject({ resultType: "task", status: "working" }); // no URL elicitation declared
    const pending = await nextPendingApproval(s, seen);
    expect(handle.statusMessage).toContain(reviewUrl(pending.approval_id));
    await s.decide(pending.approval_id, "deny", "not this one");
    const done = await settled(c, handle.taskId as string);
    expect(done.status).toBe("completed");
    expect(done.result).toMatchObject({
      isError: true,
      _meta: { "tollgate.dev/error_code": "ACTION_DENIED" },
    });
    expect(await graphHas(c, "Denied")).toBe(false);
    await c.close();
  });

  it("tasks/cancel withdraws the call and its approval: cancelled, never run, not decidable", async () => {
    const c = await connect("tasks-cancel");
    const handle = await createEntities(c, "Cancelled");
    const taskId = handle.taskId as string;
    const pending = await nextPendingApproval(s, seen);
    expect(await raw(c, "tasks/cancel", { taskId })).toMatchObject({ resultType: "complete" });
    expect(await getTask(c, taskId)).toMatchObject({ status: "cancelled" });
    await waitForApprovalStatus(s, pending.approval_id, "cancelled");
    await expect(s.decide(pending.approval_id, "approve")).rejects.toThrow();
    const stored = await s.storedChain(pending.chain_id);
    expect(stored.events[0]?.decision).toMatchObject({
      policy_decision: "deny",
      decision_reason: "Withdrawn by the caller: the MCP client cancelled the task",
    });
    expect(await graphHas(c, "Cancelled")).toBe(false);
    await c.close();
  });

  it("without the extension: today's input_required, and tasks/* is -32021", async () => {
    const c = await connect("tasks-none", {});
    const r = (await c.callTool({ name: "create_entities", arguments: entity("Plain") }, {
      allowInputRequired: true,
    } as Parameters<Client["callTool"]>[1])) as Loose;
    expect(r).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    const pending = await nextPendingApproval(s, seen);
    const err = await protocolError(getTask(c, "0".repeat(32)));
    expect(err.code).toBe(-32021);
    await s.decide(pending.approval_id, "deny");
    await c.close();
  });

  it("a task id that is bogus, huge, has a NUL or is another agent's is invalid params; the face goes on", async () => {
    const c = await connect("tasks-ids");
    const handle = await createEntities(c, "Elsewhere");
    const taskId = handle.taskId as string;
    const pending = await nextPendingApproval(s, seen);
    for (const bogus of [
      "nope",
      "f".repeat(4000),
      `${taskId.slice(0, 16)}\0${taskId.slice(17)}`,
      "0".repeat(32),
    ]) {
      for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
        const err = await protocolError(raw(c, method, { taskId: bogus, inputResponses: {} }));
        expect(err.code).toBe(-32602);
      }
    }
    // Another agent (a sidecar of its own on the same service) does not find the task.
    const other = await startSidecar({
      config: parseConfig({ ...s.configInput, agentName: "other-agent" }),
      apiKey: s.apiKey,
      sdkInternals: { pollIntervalMs: 100 },
      defaultMetrics: false,
    });
    try {
      const stranger = await connect("tasks-stranger", undefined, new URL(`${other.httpUrl}/mcp`));
      for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
        const err = await protocolError(
          raw(stranger, method, { taskId, inputResponses: { review: {} } }, new URL(`${other.httpUrl}/mcp`)),
        );
        expect(err.code).toBe(-32602);
        expect(err.message).toContain("Task not found");
      }
      await stranger.close();
    } finally {
      await other.close();
    }
    // Still waiting, untouched by all this.
    expect(await getTask(c, taskId)).toMatchObject({ status: "working" });
    await s.decide(pending.approval_id, "approve");
    const done = await settled(c, taskId);
    expect(done.status).toBe("completed");
    expect(JSON.stringify((done.result as Loose).content)).toContain("Elsewhere");
    await c.close();
  });
});
