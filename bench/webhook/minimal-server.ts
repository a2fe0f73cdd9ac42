/**
 * The smallest mutating webhook that does what Tollgate's does, for bench/webhook's second
 * baseline: node:https (HTTP/1.1 keep-alive, like the operator's), answering every AdmissionReview with one
 * precomputed JSON patch (the patch Tollgate's webhook builds for the benchmark's Pod). It reads
 * only the request uid, so the difference between it and the operator's webhook is the
 * operator's own cost (routing, validation, namespace lookup, patch building, metrics); what it
 * shares with the operator's (TLS, the API server's call and patch application) is the price of
 * any admission webhook.
 *
 * Run as a child process: `node --import tsx bench/webhook/minimal-server.ts` with
 * MINIMAL_WEBHOOK_CERT, MINIMAL_WEBHOOK_KEY (PEM), MINIMAL_WEBHOOK_PATCH (base64 JSON patch);
 * it listens on 127.0.0.1 (a free port) and prints `listening <port>`.
 */
import https from "node:https";

const { MINIMAL_WEBHOOK_CERT: cert, MINIMAL_WEBHOOK_KEY: key, MINIMAL_WEBHOOK_PATCH: patch } = process.env;
if (!cert || !key || !patch) throw new Error("MINIMAL_WEBHOOK_CERT, _KEY and _PATCH are required");

const UID = /"uid":"([^"]+)"/;
const server = https.createServer({ cert, key, minVersion: "TLSv1.2", keepAliveTimeout: 65_000 });
server.on("request", (req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    // AdmissionRequest.uid is its first field; the API server rejects a response with another uid.
    const uid = UID.exec(Buffer.concat(chunks).toString("utf8"))?.[1] ?? "";
    const body = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"${uid}","allowed":true,"patchType":"JSONPatch","patch":"${patch}"}}`;
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
// The API server keeps idle keep-alive connections open: close them rather than wait them out.
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
