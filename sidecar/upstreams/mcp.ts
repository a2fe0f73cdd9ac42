/**
 * An mcp upstream: tools on an MCP server reached through @modelcontextprotocol/sdk's Client,
 * over Streamable HTTP or stdio (a child process). `call` is tools/call with the action name as
 * the tool name and the payload as the arguments; the CallToolResult comes back as JSON. A
 * JSON-RPC error from the server is the tool's answer (isError), a closed connection or a
 * timeout is an UpstreamError. A lost connection is re-established on the next call.
 * Streamable HTTP upstreams with `credentials` carry the credential's headers on every HTTP
 * request to the server (initialize, tools/call, the GET stream, DELETE), through the
 * transport's `fetch`; a call whose credential cannot be had is not sent (UpstreamError
 * CredentialUnavailable), and a 401 answer drops a cached OAuth token.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { traceCarrier } from "../../src/telemetry/tracing.js";
import type { Logger } from "../logger.js";
import type { JsonObject } from "../wire/struct.js";
import type { CredentialSource } from "./credential-source.js";
import type { McpUpstreamConfig } from "./schema.js";
import { type CallContext, type Upstream, UpstreamError, type UpstreamResult } from "./types.js";

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
      const result = await client.callTool(params, undefined, {
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
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new UpstreamError(
          this.name,
          "timeout",
          "Timeout",
          `upstream ${this.name}: no answer within ${this.#config.timeout_ms} ms`,
        );
      }
      if (err instanceof McpError && err.code !== ErrorCode.ConnectionClosed) {
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
    const client = new Client(CLIENT_INFO, { capabilities: {} });
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
    this.#log.info({ server: client.getServerVersion()?.name }, "MCP upstream connected");
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
