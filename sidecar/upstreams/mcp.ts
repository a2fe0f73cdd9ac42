/**
 * An mcp upstream: tools on an MCP server reached through the official
 * @modelcontextprotocol/client 2.x Client, over Streamable HTTP or stdio (a child process), in
 * either era of the protocol. The era is negotiated as the SDKs do (`versionNegotiation: auto`):
 * a `server/discover` probe at connect selects revision 2026-07-28 (stateless: the client puts
 * the per-request `_meta` protocol version, clientInfo and capabilities on every request and
 * the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers on HTTP); a server that does
 * not know it gets the 2025 `initialize` handshake (2025-11-25 and earlier), as before.
 *
 * `call` is tools/call with the action name as the tool name and the payload as the arguments;
 * the CallToolResult comes back as JSON. A JSON-RPC error from the server is the tool's answer
 * (isError), a closed connection or a timeout is an UpstreamError. A lost connection is
 * re-established (and the era negotiated again) on the next call. The caller's trace context
 * goes in `params._meta.traceparent`/`tracestate` (both eras).
 * Streamable HTTP upstreams with `credentials` carry the credential's headers on every HTTP
 * request to the server (discover, initialize, tools/call, the GET stream, DELETE), through the
 * transport's `fetch`; a call whose credential cannot be had is not sent (UpstreamError
 * CredentialUnavailable), and a 401 answer drops a cached OAuth token.
 */
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from "@modelcontextprotocol/client";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { traceCarrier } from "../../src/telemetry/tracing.js";
import type { Logger } from "../logger.js";
import type { JsonObject } from "../wire/struct.js";
import type { CredentialSource } from "./credential-source.js";
import type { McpUpstreamConfig } from "./schema.js";
import { type CallContext, type Upstream, UpstreamError, type UpstreamResult } from "./types.js";

/** SdkError codes of an answer that is not a usable CallToolResult. */
const UNUSABLE_RESULT: ReadonlySet<SdkErrorCode> = new Set([
  SdkErrorCode.UnsupportedResultType,
  SdkErrorCode.InvalidResult,
  SdkErrorCode.InputRequiredRoundsExceeded,
]);

/** A tool of an MCP server, as its tools/list describes it. */
export type McpTool = Tool;

/** The sidecar's identity towards MCP servers. */
export const CLIENT_INFO = { name: "tollgate-sidecar", version: "0.1.0" } as const;

/** See the module comment. */
export class McpUpstream implements Upstream {
  readonly type = "mcp" as const;
  readonly name: string;
  readonly #config: McpUpstreamConfig;
  readonly #log: Logger;
  readonly #credentials: CredentialSource | null;
  #client: Client | null = null;
  #connecting: Promise<Client> | null = null;
  #closed = false;

  /** `credentials`: the source of a streamable_http upstream's credentials, if any. */
  constructor(config: McpUpstreamConfig, log: Logger, credentials: CredentialSource | null = null) {
    this.name = config.name;
    this.#config = config;
    this.#log = log.child({ upstream: config.name });
    this.#credentials = credentials;
  }

  async start(): Promise<void> {
    await this.#connected();
  }

  ready(): boolean {
    return this.#client !== null;
  }

  /** The server's tools (tools/list, all pages). */
  async listTools(signal?: AbortSignal): Promise<Tool[]> {
    const client = await this.#connected();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, {
        signal,
        timeout: this.#config.timeout_ms,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  async call(actionName: string, payload: JsonObject, ctx: CallContext): Promise<UpstreamResult> {
    // Fails the call before anything is sent when there is no credential (the transport's
    // fetch asks again, from the cache).
    await this.#credentials?.headers(ctx.signal);
    let client: Client;
    try {
      client = await this.#connected();
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      throw new UpstreamError(
        this.name,
        "unavailable",
        "ConnectionFailed",
        `upstream ${this.name}: ${(err as Error).message}`,
      );
    }
    try {
      const trace = traceCarrier();
      const params = { name: actionName, arguments: payload, ...(trace && { _meta: trace }) };
      const result = await client.callTool(params, {
        signal: ctx.signal,
        timeout: this.#config.timeout_ms,
      });
      const isError = result.isError === true;
      return {
        resultJson: JSON.stringify(result),
        isError,
        status: 0,
        errorClass: isError ? "McpToolError" : null,
      };
    } catch (err) {
      if (ctx.signal?.aborted)
        throw new UpstreamError(this.name, "aborted", "Aborted", `upstream ${this.name}: call aborted`);
      if (err instanceof UpstreamError) throw err;
      if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
        throw new UpstreamError(
          this.name,
          "timeout",
          "Timeout",
          `upstream ${this.name}: no answer within ${this.#config.timeout_ms} ms`,
        );
      }
      // The server answered, with an error or a result the sidecar cannot use (an
      // input_required nobody here could fulfil, a malformed result): the tool's error.
      if (err instanceof ProtocolError || (err instanceof SdkError && UNUSABLE_RESULT.has(err.code))) {
        const error = { code: err.code, message: err.message };
        return {
          resultJson: JSON.stringify({ error }),
          isError: true,
          status: 0,
          errorClass: `McpError ${err.code}`,
        };
      }
      throw new UpstreamError(
        this.name,
        "unavailable",
        "ConnectionClosed",
        `upstream ${this.name}: ${(err as Error).message}`,
      );
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client ?? (await this.#connecting?.catch(() => null));
    this.#client = null;
    await client?.close().catch(() => undefined);
  }

  #connected(): Promise<Client> {
    if (this.#client) return Promise.resolve(this.#client);
    if (this.#closed) return Promise.reject(new Error("the upstream is closed"));
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  async #connect(): Promise<Client> {
    const client = new Client(CLIENT_INFO, {
      capabilities: {},
      versionNegotiation: { mode: "auto" },
      // An input_required of the upstream has nobody to answer it here: it fails the call.
      inputRequired: { autoFulfill: false },
    });
    const transport = this.#transport();
    client.onclose = () => {
      if (this.#client === client) this.#client = null;
      if (!this.#closed) this.#log.warn("MCP upstream connection closed; reconnecting on the next call");
    };
    client.onerror = (err) => this.#log.debug({ err: err.message }, "MCP upstream transport error");
    await client.connect(transport, { timeout: this.#config.timeout_ms });
    if (this.#closed) {
      await client.close().catch(() => undefined);
      throw new Error("the upstream is closed");
    }
    this.#client = client;
    this.#log.info(
      { server: client.getServerVersion()?.name, protocolVersion: client.getNegotiatedProtocolVersion() },
      "MCP upstream connected",
    );
    return client;
  }

  #transport(): Transport {
    const c = this.#config;
    if (c.transport === "streamable_http") {
      const credentials = this.#credentials;
      if (!credentials) return new StreamableHTTPClientTransport(new URL(c.url));
      return new StreamableHTTPClientTransport(new URL(c.url), {
        fetch: async (url, init) => {
          const credential = await credentials.headers(init?.signal ?? undefined);
          const headers = new Headers(init?.headers);
          for (const [k, v] of Object.entries(credential)) headers.set(k, v);
          const res = await fetch(url, { ...init, headers });
          if (res.status === 401) credentials.rejected(credential);
          return res;
        },
      });
    }
    const transport = new StdioClientTransport({
      command: c.command,
      args: c.args,
      env: { ...getDefaultEnvironment(), ...c.env },
      cwd: c.cwd,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (d: Buffer) =>
      this.#log.debug({ stderr: d.toString("utf8").trimEnd() }, "MCP upstream stderr"),
    );
    return transport;
  }
}
