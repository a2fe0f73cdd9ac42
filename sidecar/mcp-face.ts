/**
 * The MCP face: a Streamable HTTP MCP endpoint (stateful sessions) that mirrors the tools of one
 * configured mcp upstream (TOLLGATE_MCP_UPSTREAM), so that unmodified MCP clients are governed
 * too. tools/list is passed through; every tools/call is governed like a gRPC Invoke
 * (action_type tool_call, action_name the tool name, payload the arguments, agent_name the
 * configured TOLLGATE_AGENT_NAME) inside one chain per MCP session: the chain is opened at the
 * session's first tools/call and completed when the session closes (HTTP DELETE, or sidecar
 * shutdown). A refused call is an MCP tool error result (isError) whose text is the reason;
 * `_meta["tollgate.dev/error_code"]` and `_meta["tollgate.dev/decision"]` carry the details.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  isInitializeRequest,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, GatewayError } from "./errors.js";
import type { Governor } from "./governor.js";
import { toProtoDecision } from "./grpc.js";
import type { Logger } from "./logger.js";
import type { JsonObject } from "./struct.js";
import type { McpUpstream } from "./upstreams/mcp.js";
import { checkPayloadSize } from "./validate.js";

/** The sidecar's identity towards MCP clients. */
const SERVER_INFO = { name: "tollgate-sidecar", version: "0.1.0" } as const;

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  /** The session's chain, opened on the first tools/call. */
  chainId: Promise<string> | null;
}

/** Options of the MCP face. */
export interface McpFaceOptions {
  governor: Governor;
  upstream: McpUpstream;
  agentName: string;
  maxPayloadBytes: number;
  log: Logger;
}

/** See the module comment. */
export class McpFace {
  readonly #o: McpFaceOptions;
  readonly #sessions = new Map<string, Session>();
  #closing = false;

  constructor(options: McpFaceOptions) {
    this.#o = options;
  }

  /** Open MCP sessions. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Handles one HTTP request to /mcp (POST, GET, DELETE). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    await Promise.allSettled([...this.#sessions.values()].map((s) => s.transport.close()));
  }

  #createSession(): Session {
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} } });
    const session: Session = {
      server,
      chainId: null,
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
      void this.#completeChain(session);
    };
    server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => ({
      tools: await this.#o.upstream.listTools(extra.signal),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) =>
      this.#callTool(session, req.params.name, req.params.arguments ?? {}, extra.signal),
    );
    return session;
  }

  async #callTool(
    session: Session,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const controller = new AbortController();
    const onAbort = () =>
      controller.abort(new GatewayError(ErrorCode.CANCELLED, "the MCP client cancelled the call"));
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      let payload: JsonObject;
      try {
        payload = checkPayloadSize(args as JsonObject, this.#o.maxPayloadBytes);
      } catch (err) {
        this.#o.governor.countInvalid("mcp");
        throw err;
      }
      session.chainId ??= this.#openChain(session);
      const chainId = await session.chainId.catch((err) => {
        session.chainId = null; // retry on the next call
        throw err;
      });
      const r = await this.#o.governor.invoke(
        {
          chainId,
          agentName: this.#o.agentName,
          actionType: "tool_call",
          actionName: tool,
          payload,
          parentAgentName: null,
          upstream: this.#o.upstream.name,
        },
        controller,
        "mcp",
      );
      return JSON.parse(r.result!.resultJson) as CallToolResult;
    } catch (err) {
      const e = err instanceof GatewayError ? err : new GatewayError(ErrorCode.INTERNAL, "internal error");
      if (!(err instanceof GatewayError)) this.#o.log.error({ err }, "unexpected error in an MCP tools/call");
      const chainId = await session.chainId?.catch(() => null);
      return {
        content: [{ type: "text", text: `Tollgate refused the call (${e.code}): ${e.message}` }],
        isError: true,
        _meta: {
          "tollgate.dev/error_code": e.code,
          ...(e.decision && { "tollgate.dev/decision": toProtoDecision(e.decision, chainId ?? "") }),
        },
      };
    } finally {
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

  async #completeChain(session: Session): Promise<void> {
    const chainId = await session.chainId?.catch(() => null);
    if (!chainId) return;
    try {
      await this.#o.governor.completeChain(chainId, null, new AbortController());
    } catch (err) {
      this.#o.log.warn(
        { chainId, err: (err as Error).message },
        "could not complete the chain of a closed MCP session",
      );
    }
  }
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
