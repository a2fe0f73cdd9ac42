/**
 * The modern era of the MCP face (protocol revision 2026-07-28; docs/concepts/sidecar.md "MCP
 * revisions"): stateless JSON-RPC over POST /mcp, beside the legacy sessions of server.ts on the
 * same endpoint.
 *
 * A request is modern (`isModernRequest`) when it carries no `Mcp-Session-Id` and either is
 * `server/discover` or names a 2026-07-28+ revision in `_meta["io.modelcontextprotocol/
 * protocolVersion"]` or the `MCP-Protocol-Version` header; everything else stays legacy.
 *
 * Checked in this order, as the official SDKs do (the first failure answers): a JSON-RPC request
 * or notification (400, -32600); the revision: the header agrees with the envelope (400, -32020
 * HeaderMismatch), the revision is supported (400, -32022 naming the supported ones); the
 * envelope is present on a request other than server/discover (400, -32602); `MCP-Protocol-
 * Version` and `Mcp-Method` present and equal to the body's, `Mcp-Name` equal to `params.name`
 * on tools/call (400, -32020). Then, in-band (HTTP 200): `server/discover`, `ping`, `tools/list`
 * (the upstream's tools, `ttlMs` 0, `cacheScope` private), `tools/call` (modern-calls.ts),
 * `tasks/get`, `tasks/update`, `tasks/cancel` of the tasks extension (modern-tasks.ts: -32021
 * when the request does not declare it, -32602 for a task id that is malformed or not found
 * here; `Mcp-Name` must be `params.taskId`, -32020), any other method -32601, a failure inside
 * (e.g. the upstream's tools/list) -32603. Every result has `resultType` and `_meta` serverInfo.
 * Notifications get 202 and are otherwise ignored.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { Governor } from "../../core/governor.js";
import type { Logger } from "../../logger.js";
import { executeToolSpan, mcpServerSpan } from "../../tracing.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import { refusal } from "./calls.js";
import { header, sendJson } from "./http.js";
import type { ModernCallResult, ModernCalls } from "./modern-calls.js";
import { ProgressStream, progressTokenOf } from "./modern-progress.js";
import { type ModernTasks, TASKS_EXTENSION } from "./modern-tasks.js";
import type { OperationMetrics } from "./operation-metrics.js";
import type { ToolCatalog } from "./tools.js";

/** The modern revisions the face speaks, newest first. */
export const MODERN_VERSIONS = ["2026-07-28"] as const;
const FIRST_MODERN = "2026-07-28";
const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion";
const CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo";
const CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";
/** JSON-RPC codes of the 2026-07-28 revision. */
const HEADER_MISMATCH = -32020;
const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** The methods of the tasks extension, whose `Mcp-Name` is `params.taskId`. */
const TASK_METHODS = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

/** Revision identifiers are dates: the modern era is 2026-07-28 and later. */
const isModernVersion = (v: unknown): v is string =>
  typeof v === "string" && /^\d{4}-\d{2}-\d{2}$/.test(v) && v >= FIRST_MODERN;

const MessageSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number().int()]).optional(),
  method: z.string().min(1),
  params: z.record(z.string(), z.unknown()).optional(),
});
type Message = z.infer<typeof MessageSchema>;

const EnvelopeSchema = z
  .object({
    [PROTOCOL_VERSION_KEY]: z.string(),
    [CLIENT_INFO_KEY]: z.object({ name: z.string(), version: z.string() }).loose().optional(),
    [CLIENT_CAPABILITIES_KEY]: z
      .object({
        elicitation: z.object({ url: z.unknown().optional() }).loose().optional(),
        extensions: z.record(z.string(), z.unknown()).optional(),
      })
      .loose()
      .optional(),
  })
  .loose();
type Envelope = z.infer<typeof EnvelopeSchema>;

const CallParamsSchema = z
  .object({
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
    requestState: z.string().optional(),
    // The answers to the review elicitation change nothing: only the approver decides.
    inputResponses: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

/** Params of tasks/get, tasks/update, tasks/cancel (a long id is refused before any lookup). */
const TaskParamsSchema = z
  .object({
    taskId: z.string().max(256),
    inputResponses: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

/** The envelope's protocol version of a parsed body, if any. */
function envelopeVersion(body: unknown): unknown {
  const params = (body as { params?: { _meta?: Record<string, unknown> } } | null)?.params;
  return typeof params === "object" && params !== null ? params._meta?.[PROTOCOL_VERSION_KEY] : undefined;
}

/** True when a POST body without `Mcp-Session-Id` belongs to the modern era (module comment). */
export function isModernRequest(req: IncomingMessage, body: unknown): boolean {
  if (req.method !== "POST" || header(req, "mcp-session-id") !== undefined) return false;
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  return (
    (body as { method?: unknown }).method === "server/discover" ||
    isModernVersion(envelopeVersion(body)) ||
    isModernVersion(header(req, "mcp-protocol-version"))
  );
}

/** Decodes an SEP-2243 header value (`=?base64?…?=` for values that are not plain ASCII). */
function decodeHeaderValue(v: string): string {
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(v);
  return m ? Buffer.from(m[1]!, "base64").toString("utf8") : v;
}

/** One request's answer: its result or its JSON-RPC error. */
type Answer =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: Record<string, unknown> } };

/** Thrown by the checks before dispatch: answered with `status` and a JSON-RPC error. */
class Rejection extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Options of ModernFace. */
export interface ModernFaceOptions {
  governor: Governor;
  tools: ToolCatalog;
  calls: ModernCalls;
  tasks: ModernTasks;
  serverInfo: { name: string; version: string };
  log: Logger;
  /** mcp.server.operation.duration of each request (operation-metrics.ts). */
  operations?: OperationMetrics;
  /** ms between notifications/progress of a held request with a progressToken (modern-progress.ts). */
  progressIntervalMs: number;
}

/** See the module comment. */
export class ModernFace {
  readonly #o: ModernFaceOptions;

  constructor(options: ModernFaceOptions) {
    this.#o = options;
  }

  /** Answers one modern POST (its body already parsed). */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    let message: Message;
    let envelope: Envelope | null;
    try {
      message = parseMessage(body);
      envelope = checkEra(req, message);
    } catch (err) {
      if (!(err instanceof Rejection)) throw err;
      return sendJson(res, err.status, {
        jsonrpc: "2.0",
        id: (body as { id?: unknown } | null)?.id ?? null,
        error: { code: err.code, message: err.message, ...(err.data && { data: err.data }) },
      });
    }
    if (message.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const gone = new AbortController();
    res.on("close", () => {
      if (!res.writableEnded)
        gone.abort(new GatewayError(ErrorCode.CANCELLED, "the MCP client closed the connection"));
    });
    const done = this.#o.operations?.start({
      method: message.method,
      protocolVersion: envelope?.[PROTOCOL_VERSION_KEY] ?? header(req, "mcp-protocol-version"),
      tool: typeof message.params?.name === "string" ? message.params.name : undefined,
    });
    const progress = new ProgressStream(res, progressTokenOf(message.params), this.#o.progressIntervalMs);
    const answer = await this.#dispatch(req, message, envelope, gone.signal).catch((err: unknown) => {
      // The upstream's tools/list failed, or worse: in-band, as the SDKs answer a failed handler.
      this.#o.log.error({ err, method: message.method }, "a modern MCP request failed");
      return { error: { code: -32603, message: "Internal error" } };
    });
    done?.(answer);
    progress.finish({ jsonrpc: "2.0", id: message.id, ...answer });
  }

  async #dispatch(
    req: IncomingMessage,
    m: Message,
    envelope: Envelope | null,
    signal: AbortSignal,
  ): Promise<Answer> {
    const meta = { [SERVER_INFO_KEY]: this.#o.serverInfo };
    const invalid = (message: string) => ({ error: { code: -32602, message } });
    switch (m.method) {
      case "server/discover":
        return {
          result: {
            resultType: "complete",
            supportedVersions: [...MODERN_VERSIONS],
            capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } },
            _meta: meta,
          },
        };
      case "ping":
        return { result: { resultType: "complete", _meta: meta } };
      case "tools/list": {
        if (m.params?.cursor !== undefined) return invalid("Invalid cursor");
        const tools = await this.#o.tools.list(signal);
        return {
          result: {
            resultType: "complete",
            // `execution` (task support) is not 2026-07-28 vocabulary: tasks are an extension.
            tools: tools.map(({ execution: _, ...t }) => t),
            ttlMs: 0,
            cacheScope: "private",
            _meta: meta,
          },
        };
      }
      case "tools/call": {
        const params = CallParamsSchema.safeParse(m.params ?? {});
        if (!params.success) return invalid(`Invalid params: ${params.error.issues[0]?.message}`);
        const { name, arguments: args = {}, requestState } = params.data;
        return mcpServerSpan(
          name,
          m.params?._meta,
          { protocolVersion: header(req, "mcp-protocol-version"), requestId: m.id },
          () => this.#call(name, args, requestState, envelope, String(m.id), signal),
        );
      }
      case "tasks/get":
      case "tasks/update":
      case "tasks/cancel":
        return this.#task(m, envelope);
      default:
        return { error: { code: -32601, message: `Method not found: ${m.method}` } };
    }
  }

  /** tasks/get, tasks/update, tasks/cancel (module comment). */
  async #task(m: Message, envelope: Envelope | null): Promise<Answer> {
    if (envelope?.[CLIENT_CAPABILITIES_KEY]?.extensions?.[TASKS_EXTENSION] === undefined)
      return {
        error: {
          code: MISSING_REQUIRED_CLIENT_CAPABILITY,
          message: "Missing required client capability",
          data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        },
      };
    const params = TaskParamsSchema.safeParse(m.params ?? {});
    if (!params.success)
      return { error: { code: -32602, message: `Invalid params: ${params.error.issues[0]?.message}` } };
    const { taskId, inputResponses = {} } = params.data;
    const { tasks } = this.#o;
    const meta = { [SERVER_INFO_KEY]: this.#o.serverInfo };
    try {
      if (m.method === "tasks/get")
        return { result: { ...(await tasks.get(taskId)), resultType: "complete", _meta: meta } };
      await (m.method === "tasks/update" ? tasks.update(taskId, inputResponses) : tasks.cancel(taskId));
      return { result: { resultType: "complete", _meta: meta } };
    } catch (err) {
      if (err instanceof GatewayError && err.code === ErrorCode.INVALID_ARGUMENT)
        return { error: { code: -32602, message: err.message } };
      throw err;
    }
  }

  async #call(
    name: string,
    args: Record<string, unknown>,
    requestState: string | undefined,
    envelope: Envelope | null,
    callId: string,
    signal: AbortSignal,
  ): Promise<Answer> {
    const withInfo = (r: ModernCallResult) => {
      const own = (r as { _meta?: Record<string, unknown> })._meta;
      return { result: { ...r, _meta: { ...own, [SERVER_INFO_KEY]: this.#o.serverInfo } } };
    };
    const tool = await this.#o.tools.find(name, signal);
    if (!tool) return { error: { code: -32602, message: `Unknown tool: ${name}` } };
    const checked = this.#o.tools.check(tool, args);
    if (!checked.valid) {
      this.#o.governor.countInvalid("mcp");
      const e = new GatewayError(
        ErrorCode.INVALID_ARGUMENT,
        `arguments do not match the tool's inputSchema: ${checked.message}`,
        null,
        { field: "arguments" },
      );
      return withInfo({ ...refusal(e, null), resultType: "complete" });
    }
    const info = envelope?.[CLIENT_INFO_KEY];
    const capabilities = envelope?.[CLIENT_CAPABILITIES_KEY];
    const caller = {
      client: info ? `${info.name}/${info.version}` : null,
      urlElicitation: capabilities?.elicitation?.url !== undefined,
      tasks: capabilities?.extensions?.[TASKS_EXTENSION] !== undefined,
    };
    try {
      return withInfo(
        await executeToolSpan(name, callId, () =>
          this.#o.calls.call(name, args, requestState, caller, signal),
        ),
      );
    } catch (err) {
      if (err instanceof GatewayError && err.code === ErrorCode.INVALID_ARGUMENT)
        return { error: { code: -32602, message: err.message } };
      throw err;
    }
  }
}

/** The body as one JSON-RPC request or notification. @throws Rejection 400 -32600 */
function parseMessage(body: unknown): Message {
  const parsed = MessageSchema.safeParse(body);
  if (!parsed.success) throw new Rejection(400, -32600, "Invalid Request: not a JSON-RPC request");
  return parsed.data;
}

/**
 * The era and header checks (module comment). Returns the request's envelope (null for an
 * envelope-less server/discover). @throws Rejection
 */
function checkEra(req: IncomingMessage, m: Message): Envelope | null {
  const headerVersion = header(req, "mcp-protocol-version");
  const bodyVersion = envelopeVersion(m);
  if (headerVersion !== undefined && bodyVersion !== undefined && headerVersion !== bodyVersion)
    throw new Rejection(
      400,
      HEADER_MISMATCH,
      `Header mismatch: MCP-Protocol-Version ${headerVersion} but _meta names ${String(bodyVersion)}`,
    );
  const requested = bodyVersion ?? headerVersion;
  if (requested !== undefined && !(MODERN_VERSIONS as readonly unknown[]).includes(requested))
    throw new Rejection(400, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", {
      supported: [...MODERN_VERSIONS],
      requested,
    });
  const parsed = EnvelopeSchema.safeParse((m.params as { _meta?: unknown } | undefined)?._meta);
  if (!parsed.success) {
    if (m.method === "server/discover" && bodyVersion === undefined) return null;
    const issue = parsed.error.issues[0];
    throw new Rejection(400, -32602, `Invalid params: _meta.${issue?.path.join(".")}: ${issue?.message}`);
  }
  if (m.id === undefined) return parsed.data; // notifications need no standard headers
  if (headerVersion === undefined)
    throw new Rejection(400, HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version is required");
  const method = header(req, "mcp-method");
  if (method !== m.method)
    throw new Rejection(
      400,
      HEADER_MISMATCH,
      method === undefined
        ? "Header mismatch: Mcp-Method is required"
        : `Header mismatch: Mcp-Method ${method}`,
    );
  if (m.method === "tools/call" || TASK_METHODS.has(m.method)) {
    const field = m.method === "tools/call" ? "name" : "taskId";
    const name = header(req, "mcp-name");
    if (name === undefined || decodeHeaderValue(name) !== m.params?.[field])
      throw new Rejection(400, HEADER_MISMATCH, `Header mismatch: Mcp-Name must be params.${field}`);
  }
  return parsed.data;
}
