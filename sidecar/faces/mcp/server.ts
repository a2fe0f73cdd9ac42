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
 * A forwarded call's result is the upstream's CallToolResult with `_meta["tollgate.dev/chain_id"]`
 * and `_meta["tollgate.dev/event_id"]` added.
 *
 * Refusals: an unknown tool is JSON-RPC -32602 (nothing governed or recorded); arguments that
 * fail the tool's inputSchema are a tool error result, refused before governance; a governed
 * refusal is a tool error result (isError) whose text is the reason, with
 * `_meta["tollgate.dev/error_code"]`, `_meta["tollgate.dev/decision"]` and, for approvals,
 * `_meta["tollgate.dev/approval"]` ({ approval_id, review_url, policy_name }).
 *
 * Waiting for approval (README "How each kind of client waits"):
 * - a call with `_meta.progressToken` gets notifications/progress every `progressIntervalMs`
 *   (at most 15 s) naming the approval and its review URL, so clients that reset their timeout
 *   on progress wait as long as the approval lives;
 * - a task-augmented call (`params.task`) returns a task at once (status working, status message
 *   naming the approval and the review URL); tasks/get, tasks/result, tasks/list, tasks/cancel
 *   work (mcp-tasks.ts); the TTL covers the approval timeout plus the re-attach window;
 *   cancelling withdraws the call (never forwarded) and its approval at the service (cancelled,
 *   no longer decidable); the session's chain goes on;
 * - a client that declares URL-mode elicitation gets one `elicitation/create` (mode url) with
 *   the review URL, as information only: its answer changes nothing;
 * - a retried identical call (same tool, same arguments) joins the pending approval; any other
 *   call meanwhile is refused naming the approval and its review URL (governor.ts).
 *
 * Origin: a request whose Origin is not allowed gets 403 (mcp-origin.ts).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  type ElicitRequestURLParams,
  ElicitResultSchema,
  isInitializeRequest,
  ErrorCode as JsonRpcErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { WaitUpdate } from "../../core/approval-wait.js";
import type { Governor } from "../../core/governor.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";
import { executeToolSpan, mcpServerSpan } from "../../tracing.js";
import type { McpUpstream } from "../../upstreams/mcp.js";
import { toProtoDecision } from "../../wire/decision.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import type { JsonObject } from "../../wire/struct.js";
import type { InvokeInput } from "../../wire/validate.js";
import { checkPayloadSize } from "../../wire/validate.js";
import { originAllowed } from "./origin.js";
import { GovernedTaskStore, isTerminalTaskError } from "./tasks.js";
import { ToolCatalog } from "./tools.js";

/** The first value of an HTTP header as Node gives it (absent, one value or several). */
const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The sidecar's identity towards MCP clients. */
const SERVER_INFO = { name: "tollgate-sidecar", version: "0.1.0" } as const;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** The session's current chain, opened on the first governed tools/call. */
  chainId: Promise<string> | null;
  /** The id `chainId` resolved to (null before). */
  openedChainId: string | null;
  /** ms timestamp of the last HTTP request of the session. */
  lastSeen: number;
  /** tools/call requests and tasks in progress. */
  active: number;
}

/** A task-augmented call in progress. */
interface RunningTask {
  session: Session;
  chainId: string | null;
  input: InvokeInput | null;
  controller: AbortController;
}

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
  /** Allowed Origins (lowercase; see mcp-origin.ts). */
  allowedOrigins?: readonly string[];
  /** ms a task and its result are kept (covers the approval timeout). */
  taskTtlMs?: number;
}

/** JSON-RPC params the face reads beyond what the SDK validates. */
const CallMetaSchema = z
  .object({ progressToken: z.union([z.string(), z.number()]).optional() })
  .loose()
  .optional();
const ListParamsSchema = z.object({ cursor: z.string().optional() }).loose().optional();

/** See the module comment. */
export class McpFace {
  readonly #o: Required<McpFaceOptions> | (McpFaceOptions & Required<Omit<McpFaceOptions, "metrics">>);
  readonly #sessions = new Map<string, Session>();
  readonly #tools: ToolCatalog;
  readonly #tasks = new GovernedTaskStore();
  readonly #running = new Map<string, RunningTask>();
  readonly #sweeper: NodeJS.Timeout;
  #closing = false;

  constructor(options: McpFaceOptions) {
    this.#o = {
      sessionIdleMs: 1_800_000,
      progressIntervalMs: 10_000,
      allowedOrigins: [],
      taskTtlMs: 25 * 3_600_000,
      ...options,
    };
    this.#tools = new ToolCatalog(options.upstream);
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
      void this.#completeChain(session, null);
    };
    server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
      const params = ListParamsSchema.safeParse(req.params);
      // tools/list is answered in one page: no cursor was ever handed out, so none is valid.
      if (!params.success || params.data?.cursor !== undefined)
        throw new McpError(JsonRpcErrorCode.InvalidParams, "Invalid cursor");
      const tools = await this.#tools.list(extra.signal);
      return { tools: tools.map((t) => ({ ...t, execution: { ...t.execution, taskSupport: "optional" } })) };
    });
    // Each tools/call is a span, a child of the client's params._meta.traceparent (tracing.ts).
    server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
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
          session.active++;
          try {
            return await executeToolSpan(name, String(extra.requestId), () =>
              this.#governedCall(session, name, args, extra.signal, this.#waitReporter(session, extra)),
            );
          } finally {
            session.active--;
            session.lastSeen = Date.now();
          }
        },
      ),
    );
    return session;
  }

  /** Progress notifications and URL elicitation for a waiting request (not a task). */
  #waitReporter(session: Session, extra: Extra): WaitReporter {
    const meta = CallMetaSchema.safeParse(extra._meta);
    const token = meta.success ? meta.data?.progressToken : undefined;
    let timer: NodeJS.Timeout | null = null;
    let n = 0;
    let elicited = false;
    const progress = (u: WaitUpdate) => {
      if (token === undefined) return;
      n++;
      extra
        .sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: n, message: waitMessage(u) },
        })
        .catch(() => undefined);
    };
    return {
      onWait: (u) => {
        if (u.status === "pending") {
          if (!elicited) {
            elicited = true;
            this.#elicit(session, u, (params) => extra.sendRequest(params, ElicitResultSchema));
          }
          if (!timer) {
            const started = Date.now() - u.waitedMs;
            progress(u);
            timer = setInterval(
              () => progress({ ...u, waitedMs: Date.now() - started }),
              this.#o.progressIntervalMs,
            );
          }
          return;
        }
        if (timer) clearInterval(timer);
        timer = null;
        progress(u);
      },
      done: () => {
        if (timer) clearInterval(timer);
        timer = null;
      },
    };
  }

  /**
   * Sends `elicitation/create` (mode url) pointing at the review page when the client declared
   * URL-mode elicitation. Information only: the answer is logged, never acted on.
   */
  #elicit(
    session: Session,
    u: WaitUpdate,
    send: (request: { method: "elicitation/create"; params: ElicitRequestURLParams }) => Promise<unknown>,
  ): void {
    const caps = session.server.getClientCapabilities()?.elicitation as { url?: unknown } | undefined;
    if (!caps?.url) return;
    send({
      method: "elicitation/create",
      params: {
        mode: "url",
        message: `${waitMessage(u)}. The call continues by itself once a person decides there.`,
        elicitationId: u.approvalId,
        url: u.reviewUrl,
      },
    }).then(
      (answer) => this.#o.log.debug({ approvalId: u.approvalId, answer }, "URL elicitation answered"),
      (err: Error) =>
        this.#o.log.debug({ approvalId: u.approvalId, err: err.message }, "URL elicitation failed"),
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
        this.#elicit(session, u, (request) => session.server.request(request, ElicitResultSchema));
      },
      done: () => undefined,
    };
    void (async () => {
      try {
        const result = await this.#governedCall(
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
    if (!running) return;
    const reason = "the MCP client cancelled the task";
    const approvalId =
      running.chainId !== null && running.input !== null
        ? this.#o.governor.withdraw(running.chainId, running.input, null, reason)
        : null;
    running.controller.abort(new GatewayError(ErrorCode.CANCELLED, reason));
    if (approvalId) await this.#o.governor.withdrawApproval(approvalId, reason);
  }

  /** One governed tools/call; refusals become tool error results. */
  async #governedCall(
    session: Session,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    reporter: WaitReporter,
    running?: RunningTask,
  ): Promise<CallToolResult> {
    const controller = new AbortController();
    const onAbort = () =>
      controller.abort(
        signal.reason instanceof GatewayError
          ? signal.reason
          : new GatewayError(ErrorCode.CANCELLED, "the MCP client cancelled the call"),
      );
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    let chainId: string | null = null;
    try {
      let payload: JsonObject;
      try {
        payload = checkPayloadSize(args as JsonObject, this.#o.maxPayloadBytes);
      } catch (err) {
        this.#o.governor.countInvalid("mcp");
        throw err;
      }
      session.chainId ??= this.#openChain(session);
      const opening = session.chainId;
      chainId = await opening.catch((err) => {
        if (session.chainId === opening) session.chainId = null; // retry on the next call
        throw err;
      });
      if (session.chainId === opening) session.openedChainId = chainId;
      const input: InvokeInput = {
        chainId,
        agentName: this.#o.agentName,
        actionType: "tool_call",
        actionName: tool,
        payload,
        parentAgentName: null,
        upstream: this.#o.upstream.name,
      };
      if (running) {
        running.chainId = chainId;
        running.input = input;
      }
      const r = await this.#o.governor.invoke(input, controller, "mcp", { onWait: reporter.onWait });
      const result = JSON.parse(r.result!.resultJson) as CallToolResult;
      return {
        ...result,
        _meta: {
          ...result._meta,
          "tollgate.dev/chain_id": chainId,
          "tollgate.dev/event_id": r.decision.event_id,
        },
      };
    } catch (err) {
      const e = err instanceof GatewayError ? err : new GatewayError(ErrorCode.INTERNAL, "internal error");
      if (!(err instanceof GatewayError)) this.#o.log.error({ err }, "unexpected error in an MCP tools/call");
      return refusal(e, chainId);
    } finally {
      reporter.done();
      signal.removeEventListener("abort", onAbort);
    }
  }

  #openChain(session: Session): Promise<string> {
    const client = session.server.getClientVersion();
    return this.#o.governor.openChain(
      "mcp-session",
      {
        mcp_session_id: session.transport.sessionId ?? null,
        mcp_client: client ? `${client.name}/${client.version}` : null,
        upstream: this.#o.upstream.name,
      },
      new AbortController(),
    );
  }

  /** Ends sessions idle for `sessionIdleMs` with nothing in progress or waiting. */
  #expireIdle(): void {
    const now = Date.now();
    for (const session of this.#sessions.values()) {
      if (session.active > 0 || now - session.lastSeen < this.#o.sessionIdleMs) continue;
      // A caller that timed out left its call waiting: the session lives as long as the approval.
      if (session.openedChainId && this.#o.governor.waitsForApproval(session.openedChainId)) continue;
      this.#o.log.info({ sessionId: session.transport.sessionId }, "MCP session expired (idle)");
      void session.transport.close(); // onclose completes the chain
    }
  }

  async #completeChain(
    session: Pick<Session, "chainId">,
    failure: { mode: string; message: string } | null,
  ): Promise<void> {
    const chainId = await session.chainId?.catch(() => null);
    if (!chainId) return;
    try {
      await this.#o.governor.completeChain(chainId, failure, new AbortController());
    } catch (err) {
      const e = err as GatewayError;
      if (e.code === ErrorCode.CHAIN_COMPLETED) return;
      this.#o.log.warn({ chainId, err: e.message }, "could not complete the chain of an MCP session");
    }
  }
}

/** What a waiting call does with status updates. */
interface WaitReporter {
  onWait: (u: WaitUpdate) => void;
  done: () => void;
}

/** The human-readable line of a wait: names the approval and the review URL. */
export function waitMessage(u: WaitUpdate): string {
  const policy = u.policyName ? ` (policy ${u.policyName})` : "";
  if (u.status === "pending")
    return `Waiting for approval ${u.approvalId}${policy}, ${Math.round(u.waitedMs / 1000)} s so far: review it at ${u.reviewUrl}`;
  return `Approval ${u.approvalId}${policy}: ${u.status.replace("_", " ")}`;
}

/** A refused call as a tool error result. */
function refusal(e: GatewayError, chainId: string | null): CallToolResult {
  const approvalId = e.context.approvalId ?? e.decision?.approval_id ?? null;
  return {
    content: [{ type: "text", text: `Tollgate refused the call (${e.code}): ${e.message}` }],
    isError: true,
    _meta: {
      "tollgate.dev/error_code": e.code,
      ...(e.decision && { "tollgate.dev/decision": toProtoDecision(e.decision, chainId ?? "") }),
      ...(approvalId && {
        "tollgate.dev/approval": {
          approval_id: approvalId,
          review_url: e.context.reviewUrl ?? null,
          policy_name: e.context.policyName ?? e.decision?.policy_name ?? null,
        },
      }),
    },
  };
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** Reads a request body as text, refusing more than `limit` bytes. */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error("too large"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
