// bench/cluster's floor, relay side: the hops of a governed call with almost nothing done at any of
// them, pod to pod. A bare grpc-js server of the same ToolGateway proto, run as a second container
// of the agent pod (so the load reaches it on 127.0.0.1 as it reaches the sidecar; bound to all
// addresses for the kubelet's readiness probe), whose Invoke
// POSTs the action to the minimal decision server (its own pod, one INSERT into the in-cluster
// PostgreSQL; minimal-decision.mjs), then the payload to the tool's Service, over node:http
// keep-alive, and answers "allow": no validation, policy, metrics, outcome reports or receipts.
// As bench/sidecar-overhead/minimal.ts, which the out-of-cluster benchmark uses.
//   env DECISION_URL, UPSTREAM_URL, PORT (default 50061); stops on SIGTERM.
import http from "node:http";
import { loadGateway } from "./gateway.mjs";

const { grpc, Gateway } = loadGateway();
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });
const decisionUrl = process.env.DECISION_URL;
const upstreamUrl = new URL(process.env.UPSTREAM_URL);

/** google.protobuf.Value (proto-loader's object form, `kind` naming the field set) → plain JSON. */
function fromValue(v) {
  switch (v.kind) {
    case "nullValue":
      return null;
    case "listValue":
      return (v.listValue.values ?? []).map(fromValue);
    case "structValue":
      return fromStruct(v.structValue);
    default:
      return v[v.kind];
  }
}
const fromStruct = (s) =>
  Object.fromEntries(Object.entries(s?.fields ?? {}).map(([k, v]) => [k, fromValue(v)]));

/** One keep-alive POST; resolves with the body text of a 2xx answer. */
const post = (url, body) =>
  new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          text += c;
        });
        res.on("end", () =>
          res.statusCode >= 200 && res.statusCode < 300
            ? resolve(text)
            : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });

const decision = { policy_decision: "allow" };
const unimplemented = (_call, cb) => cb({ code: grpc.status.UNIMPLEMENTED });
const server = new grpc.Server();
server.addService(Gateway.service, {
  OpenChain: (_call, cb) => cb(null, { chain_id: "minimal" }),
  Invoke: (call, cb) => {
    const { chain_id, agent_name, action_name, payload, upstream } = call.request;
    const args = fromStruct(payload);
    (async () => {
      await post(
        new URL(`/v1/chains/${chain_id}/actions`, decisionUrl),
        JSON.stringify({ agent_name, action_name, payload: args }),
      );
      if (!upstream) return cb(null, { decision, forwarded: false });
      const result_json = await post(upstreamUrl, JSON.stringify(args));
      cb(null, { decision, forwarded: true, result_json, upstream_status: 200 });
    })().catch((err) => cb({ code: grpc.status.UNAVAILABLE, details: err.message }));
  },
  WatchInvoke: (call) => call.destroy({ code: grpc.status.UNIMPLEMENTED }),
  CompleteChain: (_call, cb) => cb(null, {}),
  GetReceipt: unimplemented,
  GetDecision: unimplemented,
});
server.bindAsync(`0.0.0.0:${process.env.PORT ?? 50061}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
