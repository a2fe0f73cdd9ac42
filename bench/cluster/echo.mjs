// The tool of bench/cluster, in a pod of its own behind a Service: an HTTP server on :8080 that
// answers every JSON POST with {"ok": true, "echo": <the body>} (the sidecar's http upstream
// contract), as bench/lib/sidecar-process.ts's local echo upstream does. SIGTERM closes it.
import http from "node:http";

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const out = `{"ok":true,"echo":${Buffer.concat(chunks).toString("utf8") || "null"}}`;
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(out) });
    res.end(out);
  });
});
// Longer than any run: the clients (the agent, the sidecar), not this server, close idle sockets.
server.keepAliveTimeout = 600_000;
server.listen(8080, "0.0.0.0", () => console.log("echo listening on :8080"));
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
