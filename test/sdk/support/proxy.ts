/**
 * A real TCP proxy in front of the test service for fault injection and wire capture: while
 * `down`, new connections are reset and open ones destroyed (the client sees a real network
 * error); everything the client sends is recorded so tests can assert what left the process.
 */
import net from "node:net";

export interface TcpProxy {
  /** http://127.0.0.1:<port> of the proxy. */
  url: string;
  /** Raw request bytes received from clients, as latin1 text, connection by connection. */
  received(): string;
  /** The JSON bodies of the HTTP requests seen so far whose request line matches `pattern`. */
  requestBodies(pattern: RegExp): unknown[];
  /** Number of HTTP requests seen whose request line matches `pattern`. */
  count(pattern: RegExp): number;
  /** Reset new and open connections (true) or forward again (false). */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

/** Starts a proxy forwarding to `targetUrl` (http://host:port). */
export async function startProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  let down = false;
  const logs: { text: string }[] = [];
  const server = net.createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    const entry = { text: "" };
    logs.push(entry);
    client.on("data", (chunk: Buffer) => {
      entry.text += chunk.toString("latin1");
    });
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;

  /** Splits the captured stream into requests (request line + headers + content-length body). */
  const requests = (): { line: string; body: string }[] => {
    const out: { line: string; body: string }[] = [];
    for (const entry of logs) parse(entry.text, out);
    return out;
  };
  const parse = (text: string, out: { line: string; body: string }[]): void => {
    let rest = text;
    for (;;) {
      const headEnd = rest.indexOf("\r\n\r\n");
      if (headEnd < 0) break;
      const head = rest.slice(0, headEnd);
      const line = head.split("\r\n")[0] ?? "";
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      const body = rest.slice(headEnd + 4, headEnd + 4 + length);
      out.push({ line, body: Buffer.from(body, "latin1").toString("utf8") });
      rest = rest.slice(headEnd + 4 + length);
    }
  };

  return {
    url: `http://127.0.0.1:${port}`,
    received: () => logs.map((e) => e.text).join(""),
    requestBodies: (pattern) =>
      requests()
        .filter((r) => pattern.test(r.line))
        .map((r) => JSON.parse(r.body)),
    count: (pattern) => requests().filter((r) => pattern.test(r.line)).length,
    setDown(value) {
      down = value;
      if (value) for (const s of sockets) s.resetAndDestroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
