/**
 * A modern-only MCP upstream over Streamable HTTP (revision 2026-07-28; legacy requests refused):
 * the official @modelcontextprotocol/server 2.x `createMcpHandler` around the server of
 * fixtures/modern-mcp-server.mjs, on node:http, recording each request's method, MCP headers and
 * body so that tests can check what the sidecar sent.
 */
import http from "node:http";
import { Readable } from "node:stream";
import { createMcpHandler } from "@modelcontextprotocol/server";
// @ts-expect-error a plain ES module fixture (also run by node over stdio)
import { modernServer } from "./fixtures/modern-mcp-server.mjs";

/** Path of the fixture, run with `node <path> stdio` as a stdio upstream. */
export const modernServerEntry = new URL("./fixtures/modern-mcp-server.mjs", import.meta.url).pathname;

/** One request the upstream received. */
export interface SeenRequest {
  httpMethod: string;
  headers: Record<string, string | undefined>;
  body: { method?: string; params?: Record<string, unknown> } | null;
}

/** A running modern upstream. */
export interface ModernUpstream {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** Starts the modern-only upstream on a free port of 127.0.0.1. */
export async function startModernUpstream(): Promise<ModernUpstream> {
  const handler = createMcpHandler(() => modernServer(), { legacy: "reject" });
  const seen: SeenRequest[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const pick = (name: string) => req.headers[name] as string | undefined;
    seen.push({
      httpMethod: req.method ?? "",
      headers: {
        "mcp-method": pick("mcp-method"),
        "mcp-name": pick("mcp-name"),
        "mcp-protocol-version": pick("mcp-protocol-version"),
        "mcp-session-id": pick("mcp-session-id"),
      },
      body: text ? JSON.parse(text) : null,
    });
    const response = await handler.fetch(
      new Request(`http://127.0.0.1${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) =>
          v === undefined ? [] : (Array.isArray(v) ? v : [v]).map((x) => [k, x] as [string, string]),
        ),
        ...(text && { body: text }),
      }),
    );
    res.writeHead(
      response.status,
      Object.fromEntries(response.headers as unknown as Iterable<[string, string]>),
    );
    if (response.body) Readable.fromWeb(response.body as never).pipe(res);
    else res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    seen,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
