/**
 * The MCP face: a Streamable HTTP MCP endpoint (stateful sessions, protocol revision 2025-11-25
 * and the earlier ones the SDK negotiates) that mirrors the tools of one configured mcp upstream
 * (TOLLGATE_MCP_UPSTREAM), so that unmodified MCP clients are governed too. tools/list is passed
 * through; every tools/call is governed like a gRPC Invoke (action_type tool_call, action_name
 * the tool name, payload the arguments, agent_name the configured TOLLGATE_AGENT_NAME) inside one
 * chain per MCP session: the chain is opened at the session's first governed tools/call and
 * completed (receipt issued) when the session ends: HTTP DELETE, idle expiry
 * (`sessionIdleMs` with no request and no call in progress or waiting), or sidecar shutdown.
 *
 * The governed call, its result and its refusals: calls.ts.
 *
 * Refusals: an unknown tool is JSON-RPC -32602 (nothing governed or recorded); arguments that
 * fail the tool's inputSchema are a tool error result, refused before governance; a governed
 * refusal is a tool error result (calls.ts).
 *
 * Waiting for approval (README "How each kind of client waits"):
 * - a call with `_meta.progressToken` gets notifications/progress every `progressIntervalMs`
 *   (at most 15 s) naming the approval and its review URL, so clients that reset their timeout
 *   on progress wait as long as the approval lives;
 * - a task-augmented call (`params.task`) returns a task at once (status working, status message
 *   naming the approval and the review URL); tasks/get, tasks/result, tasks/list, tasks/cancel
 *   work (tasks.ts); the TTL covers the approval timeout plus the re-attach window;
 *   cancelling withdraws the call (never forwarded) and its approval at the service (cancelled,
 *   no longer decidable); the session's chain goes on;
 * - a client that declares URL-mode elicitation gets one `elicitation/create` (mode url) with
 *   the review URL, as information only: its answer changes nothing (session.ts);
 * - a retried identical call (same tool, same arguments), from this session or a new one (a
 *   client that reconnects to retry), joins the pending approval; any other
 *   call meanwhile is refused naming the approval and its review URL (core/approvals.ts).
 *
 * Origin: a request whose Origin is not allowed gets 403 (origin.ts).
 *
 * The modern era (revision 2026-07-28: no session, server/discover, input_required) is answered
 * on the same endpoint by modern.ts; this module keeps the legacy sessions.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  isInitializeRequest,
  ErrorCode as JsonRpcErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Governor } from "../../core/governor.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import { executeToolSpan, mcpServerSpan } from "../../tracing.js";
import type { McpUpstream } from "../../upstreams/mcp.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import { GovernedCalls, refusal } from "./calls.js";
import { header, jsonRpcError, readBody } from "./http.js";
import { isModernRequest, ModernFace } from "./modern.js";
import { ModernCalls } from "./modern-calls.js";
import { ModernTasks } from "./modern-tasks.js";
import { OperationMetrics } from "./operation-metrics.js";
import { originAllowed } from "./origin.js";
import { RequestStates, stateKey } from "./request-state.js";
import {
  type Extra,
  elicitReview,
  type RunningTask,
  requestWaitReporter,
  type Session,
  type WaitReporter,
  waitMessage,
} from "./session.js";
import { GovernedTaskStore, isTerminalTaskError } from "./tasks.js";
import { ToolCatalog } from "./tools.js";

/** The first value of an HTTP header as Node gives it (absent, one value or several). */
const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The sidecar's identity towards MCP clients. */
const SERVER_INFO = { name: "tollgate-sidecar", version: "0.1.0" } as const;

/** Options of the MCP face. */
export interface McpFaceOptions {
  governor: Governor;
  upstream: McpUpstream;
  agentName: string;
  maxPayloadBytes: number;
  log: Logger;
  metrics?: Metrics;
  /** ms without a request (and no call in progress or waiting) after which a session expires. */
  sessionIdleMs?: number;
  /** ms between notifications/progress of a waiting call (at most 15000). */
  progressIntervalMs?: number;
  /** Allowed Origins (lowercase; see origin.ts). */
  allowedOrigins?: readonly string[];
  /** ms a task and its result are kept (covers the approval timeout). */
  taskTtlMs?: number;
  /** ms a modern-era retry is held while its approval is pending (modern-calls.ts). */
  modernHoldMs?: number;
  /**
   * The secret all replicas of the pod template share, keying requestState handles
   * (request-state.ts `stateKey`): the API key; null with a per-pod service account token.
   */
  stateSecret?: string | null;
}

const ListParamsSchema = z.object({ cursor: z.string().optional() }).loose().optional();

/** See the module comment. */
export class McpFace {
  readonly #o: Required<McpFaceOptions> | (McpFaceOptions & Required<Omit<McpFaceOptions, "metrics">>);
  readonly #sessions = new Map<string, Session>();
  readonly #tools: ToolCatalog;
  readonly #calls: GovernedCalls;
  readonly #modernCalls: ModernCalls;
  readonly #modern: ModernFace;
  readonly #tasks = new GovernedTaskStore();
  readonly #running = new Map<string, RunningTask>();
  readonly #operations: OperationMetrics;
  readonly #sweeper: NodeJS.Timeout;
  #closing = false;

  constructor(options: McpFaceOptions) {
    this.#o = {
      sessionIdleMs: 1_800_000,
      progressIntervalMs: 10_000,
      allowedOrigins: [],
      taskTtlMs: 25 * 3_600_000,
      modernHoldMs: 45_000,
      stateSecret: null,
      ...options,
    };
    this.#tools = new ToolCatalog(options.upstream);
    this.#operations = new OperationMetrics(options.metrics);
    this.#calls = new GovernedCalls({
      governor: options.governor,
      agentName: options.agentName,
      upstreamName: options.upstream.name,
      maxPayloadBytes: options.maxPayloadBytes,
      log: options.log,
    });
    const modernTasks = new ModernTasks({
      store: this.#tasks,
      agentName: options.agentName,
      ttlMs: this.#o.taskTtlMs,
      pollIntervalMs: 1000,
      log: options.log,
    });
    this.#modernCalls = new ModernCalls({
      governor: options.governor,
      calls: this.#calls,
      tasks: modernTasks,
      states: new RequestStates(stateKey(this.#o.stateSecret, options.agentName, options.upstream.name)),
      holdMs: this.#o.modernHoldMs,
    });
    this.#modern = new ModernFace({
      governor: options.governor,
      tools: this.#tools,
      calls: this.#modernCalls,
      tasks: modernTasks,
      serverInfo: SERVER_INFO,
      log: options.log,
      operations: this.#operations,
      progressIntervalMs: this.#o.progressIntervalMs,
    });
    this.#tasks.onCancel = (taskId) => void this.#cancelTask(taskId);
    if (options.metrics) options.metrics.sources.mcpSessions = () => this.#sessions.size;
    this.#sweeper = setInterval(() => this.#expireIdle(), Math.min(this.#o.sessionIdleMs / 2, 15_000));
    this.#sweeper.unref();
  }

  /** Open MCP sessions. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Handles one HTTP request to /mcp (POST, GET, DELETE). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!originAllowed(header(req, "origin"), this.#o.allowedOrigins)) {
      this.#o.log.warn({ origin: header(req, "origin") }, "refused an MCP request from a foreign Origin");
      return jsonRpcError(res, 403, -32000, "Forbidden: Origin not allowed");
    }
    const sessionId = header(req, "mcp-session-id");
    let body: unknown;
    if (req.method === "POST") {
      try {
        body = JSON.parse((await readBody(req, this.#o.maxPayloadBytes * 2)) || "null");
      } catch (err) {
        return jsonRpcError(
          res,
          400,
          -32700,
          (err as Error).message === "too large" ? "Request too large" : "Parse error",
        );
      }
    }
    if (isModernRequest(req, body)) {
      if (this.#closing) return jsonRpcError(res, 503, -32000, "The sidecar is shutting down");
      return this.#modern.handle(req, res, body);
    }
    if (sessionId) {
      const session = this.#sessions.get(sessionId);
      if (!session) return jsonRpcError(res, 404, -32001, "Session not found");
      session.lastSeen = Date.now();
      return session.transport.handleRequest(req, res, body);
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return jsonRpcError(
        res,
        400,
        -32000,
        "Bad Request: no valid session id, and not an initialize request",
      );
    }
    if (this.#closing) return jsonRpcError(res, 503, -32000, "The sidecar is shutting down");
    const session = this.#createSession();
    await session.server.connect(session.transport);
    await session.transport.handleRequest(req, res, body);
  }

  /** Closes every session (completing its chain). */
  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#sweeper);
    this.#modernCalls.close();
    await Promise.allSettled([...this.#sessions.values()].map((s) => s.transport.close()));
    this.#tasks.cleanup();
  }

  #createSession(): Session {
    const server = new Server(SERVER_INFO, {
      capabilities: {
        tools: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      taskStore: this.#tasks,
    });
    const session: Session = {
      server,
      chainId: null,
      openedChainId: null,
      chainInfo: () => {
        const client = server.getClientVersion();
        return {
          name: "mcp-session",
          metadata: {
            mcp_session_id: session.transport.sessionId ?? null,
            mcp_client: client ? `${client.name}/${client.version}` : null,
          },
        };
      },
      lastSeen: Date.now(),
      active: 0,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          this.#sessions.set(id, session);
        },
      }),
    };
    session.transport.onclose = () => {
      const id = session.transport.sessionId;
      if (id) this.#sessions.delete(id);
      void this.#calls.completeChain(session, null);
    };
    server.setRequestHandler(
      ListToolsRequestSchema,
      this.#timed(async (req, extra) => {
        const params = ListParamsSchema.safeParse(req.params);
        // tools/list is answered in one page: no cursor was ever handed out, so none is valid.
        if (!params.success || params.data?.cursor !== undefined)
          throw new McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor");
        const tools = await this.#tools.list(extra.signal);
        return {
          tools: tools.map((t) => ({
            ...t,
            execution: { ...t.execution, taskSupport: "optional" as const },
          })),
        };
      }),
    );
    // Each tools/call is a span, a child of the client's params._meta.traceparent (tracing.ts).
    server.setRequestHandler(
      CallToolRequestSchema,
      this.#timed((req, extra) =>
        mcpServerSpan(
          req.params.name,
          req.params._meta,
          {
            sessionId: extra.sessionId,
            protocolVersion: headerValue(extra.requestInfo?.headers?.["mcp-protocol-version"]),
            requestId: extra.requestId,
          },
          async () => {
            const { name, arguments: args = {}, task } = req.params;
            const tool = await this.#tools.find(name, extra.signal);
            if (!tool) throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown tool: ${name}`);
            const checked = this.#tools.check(tool, args);
            if (!checked.valid) {
              this.#o.governor.countInvalid("mcp");
              return refusal(
                new GatewayError(
                  ErrorCode.INVALID_ARGUMENT,
                  `arguments do not match the tool's inputSchema: ${checked.message}`,
                  null,
                  {
                    field: "arguments",
                  },
                ),
                null,
              );
            }
            if (task) return this.#startTask(session, name, args, task.ttl ?? null, extra);
            // The same call waiting in another session's chain (a client that opened a new session
            // to retry): re-attach to it there.
            const owner = this.#waitingOwner(session, name, args) ?? session;
            session.active++;
            if (owner !== session) owner.active++;
            try {
              return await executeToolSpan(name, String(extra.requestId), () =>
                this.#calls.call(
                  owner,
                  name,
                  args,
                  extra.signal,
                  requestWaitReporter(session, extra, this.#o.progressIntervalMs, this.#o.log),
                ),
              );
            } finally {
              session.active--;
              if (owner !== session) owner.active--;
              session.lastSeen = owner.lastSeen = Date.now();
            }
          },
        ),
      ),
    );
    return session;
  }

  /**
   * The other session whose chain holds the wait of this very call (same agent, tool and
   * arguments: the fingerprint), pending or approved and not yet received: a retry from a new
   * session re-attaches there (issue 29). Null when there is none.
   */
  #waitingOwner(session: Session, tool: string, args: Record<string, unknown>): Session | null {
    const byChain = new Map<string, Session>();
    for (const other of this.#sessions.values())
      if (other !== session && other.openedChainId) byChain.set(other.openedChainId, other);
    const input = this.#calls.inputOf(session.openedChainId ?? "", tool, args);
    const chainId = this.#o.governor.chainHolding(byChain.keys(), input);
    return chainId ? byChain.get(chainId)! : null;
  }

  /**
   * A request handler of the legacy Server, timed as mcp.server.operation.duration
   * (operation-metrics.ts): the request's method, `MCP-Protocol-Version` header and tool name.
   */
  #timed<R extends { method: string; params?: object }, T>(
    handler: (req: R, extra: Extra) => Promise<T>,
  ): (req: R, extra: Extra) => Promise<T> {
    return (req, extra) =>
      this.#operations.around(
        {
          method: req.method,
          protocolVersion: headerValue(extra.requestInfo?.headers?.["mcp-protocol-version"]),
          tool: (req.params as { name?: string } | undefined)?.name,
        },
        () => handler(req, extra),
      );
  }

  /** Creates a task for a task-augmented tools/call and runs the governed call behind it. */
  async #startTask(
    session: Session,
    tool: string,
    args: Record<string, unknown>,
    requestedTtl: number | null,
    extra: Extra,
  ) {
    const store = extra.taskStore;
    if (!store) throw new McpError(JsonRpcErrorCode.InternalError, "tasks are not available");
    const ttl = Math.max(requestedTtl ?? 0, this.#o.taskTtlMs);
    const task = await store.createTask({ ttl, pollInterval: 1000 });
    const running: RunningTask = { session, chainId: null, input: null, controller: new AbortController() };
    this.#running.set(task.taskId, running);
    session.active++;
    const reporter: WaitReporter = {
      onWait: (u) => {
        if (u.status !== "pending") return;
        store.updateTaskStatus(task.taskId, "working", waitMessage(u)).catch(() => undefined);
        elicitReview(
          session,
          u,
          (request) => session.server.request(request, ElicitResultSchema),
          this.#o.log,
        );
      },
      done: () => undefined,
    };
    void (async () => {
      try {
        const result = await this.#calls.call(
          session,
          tool,
          args,
          running.controller.signal,
          reporter,
          running,
        );
        await store.storeTaskResult(task.taskId, result.isError ? "failed" : "completed", result);
      } catch (err) {
        if (!isTerminalTaskError(err)) this.#o.log.error({ err }, "could not store an MCP task result");
      } finally {
        this.#running.delete(task.taskId);
        session.active--;
        session.lastSeen = Date.now();
      }
    })();
    return { task };
  }

  /**
   * tasks/cancel: withdraws the call (never forwarded). When it waited for approval, the
   * approval is withdrawn at the service too (POST /v1/approvals/{id}/withdraw: cancelled, no
   * longer decidable) and the session's chain goes on.
   */
  async #cancelTask(taskId: string): Promise<void> {
    const running = this.#running.get(taskId);
    if (running) await this.#calls.withdraw(running, "the MCP client cancelled the task");
  }

  /**
   * Ends sessions idle for `sessionIdleMs` with nothing in progress or waiting, and completes
   * the chains of modern calls whose wait is gone.
   */
  #expireIdle(): void {
    this.#modernCalls.sweep();
    const now = Date.now();
    for (const session of this.#sessions.values()) {
      if (session.active > 0 || now - session.lastSeen < this.#o.sessionIdleMs) continue;
      // A caller that timed out left its call waiting: the session lives as long as the approval.
      if (session.openedChainId && this.#o.governor.waitsForApproval(session.openedChainId)) continue;
      this.#o.log.info({ sessionId: session.transport.sessionId }, "MCP session expired (idle)");
      void session.transport.close(); // onclose completes the chain
    }
  }
}
