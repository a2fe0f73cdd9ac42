/**
 * Progress of a modern-era (MCP 2026-07-28) request that carries `_meta.progressToken`: while
 * the request is held (a tools/call retry waiting for its approval, or a slow tool), every
 * `intervalMs` the answer becomes a Server-Sent Events stream (as the SDKs' servers upgrade a
 * response when a related message precedes the result) and gets a `notifications/progress`
 * with the token, a growing `progress` count and a message saying how long the call has
 * waited; the result is then the stream's last event. A request answered before the first
 * interval stays a plain JSON answer. Clients that reset their request timeout on progress
 * (the TS SDK's `resetTimeoutOnProgress`) thus wait as long as the call is held.
 */
import type { ServerResponse } from "node:http";
import { sendJson } from "./http.js";

/** The progress token of a request's params, if any (a string or an integer). */
export function progressTokenOf(params: Record<string, unknown> | undefined): string | number | undefined {
  const token = (params?._meta as { progressToken?: unknown } | undefined)?.progressToken;
  return typeof token === "string" || (typeof token === "number" && Number.isInteger(token))
    ? token
    : undefined;
}

/** See the module comment. */
export class ProgressStream {
  readonly #res: ServerResponse;
  readonly #token: string | number | undefined;
  readonly #timer: NodeJS.Timeout | null;
  readonly #started = Date.now();
  #count = 0;

  /** Starts the interval for `token` (nothing when it is undefined). */
  constructor(res: ServerResponse, token: string | number | undefined, intervalMs: number) {
    this.#res = res;
    this.#token = token;
    this.#timer = token === undefined ? null : setInterval(() => this.#progress(), intervalMs);
  }

  /** Stops the interval and sends the answer: as the stream's last event, or as plain JSON. */
  finish(answer: Record<string, unknown>): void {
    if (this.#timer) clearInterval(this.#timer);
    if (!this.#res.headersSent) {
      sendJson(this.#res, 200, answer);
      return;
    }
    this.#event(answer);
    this.#res.end();
  }

  #progress(): void {
    if (this.#res.writableEnded) return;
    if (!this.#res.headersSent)
      this.#res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    this.#count++;
    const seconds = Math.round((Date.now() - this.#started) / 1000);
    this.#event({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: {
        progressToken: this.#token,
        progress: this.#count,
        message: `The call is held (${seconds} s): waiting for its approval or for the tool`,
      },
    });
  }

  #event(message: Record<string, unknown>): void {
    this.#res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }
}
