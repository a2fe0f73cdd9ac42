// The load generator of bench/cluster, run inside the agent pod (image ghcr.io/tollgate/tollgate,
// which has node, @grpc/grpc-js and the protos in /app; mounted from a ConfigMap). It times, pod
// to pod, the same JSON tool call made
//   direct    straight to the tool's Service (keep-alive HTTP/1.1 POST, the request the sidecar's
//             http upstream makes), and
//   governed  through the injected sidecar's gRPC Invoke on 127.0.0.1:50051 (the service decides
//             and records, the sidecar forwards to the same tool),
//   relay     through the minimal relay (minimal-relay.mjs, a second container of this pod, on
//             127.0.0.1:50061): the same hops — decision server in its own pod with one INSERT
//             into the same PostgreSQL, then the same tool — with nothing else done,
//   goRelay   through the Go relay floor (bench/sidecar-overhead/go-relay, a third container of
//             this pod, on 127.0.0.1:50062): the same relay in Go, to the same decision server,
// interleaved call by call (the order rotates), each call `gapMs` apart.
//   node load.mjs serve          idles until SIGTERM (the agent container's command)
//   node load.mjs run JSON       JSON: {url, upstream, calls, rounds, warmup, gapMs, deadlineMs}
//                                prints one line
//                                {rounds: [{direct: [µs], governed: [µs], relay: [µs],
//                                goRelay: [µs]}], chains}
// Waits (≤ 30 s) until the tool's Service answers; then exits 1 on the first failed call, or
// when the run outlives deadlineMs.

import http from "node:http";
import { loadGateway } from "./gateway.mjs";

const [cmd, arg] = process.argv.slice(2);

if (cmd === "serve") {
  process.on("SIGTERM", () => process.exit(0));
  setInterval(() => {}, 1 << 30);
} else if (cmd === "run") {
  const opts = JSON.parse(arg);
  const { grpc, Gateway } = loadGateway();
  const client = new Gateway(
    process.env.AGENT_SIDECAR ?? "127.0.0.1:50051",
    grpc.credentials.createInsecure(),
  );
  const relayClient = new Gateway(opts.relay ?? "127.0.0.1:50061", grpc.credentials.createInsecure());
  const goRelayClient = new Gateway(opts.goRelay ?? "127.0.0.1:50062", grpc.credentials.createInsecure());
  const payload = { query: "weather in Paris", units: "metric", limit: 5 };
  const body = JSON.stringify(payload);
  const struct = {
    fields: {
      query: { stringValue: payload.query },
      units: { stringValue: payload.units },
      limit: { numberValue: payload.limit },
    },
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4, timeout: 30_000 });
  const url = new URL(opts.url);
  const deadline = Date.now() + opts.deadlineMs;
  const unary = (method, req, via = client) =>
    new Promise((resolve, reject) =>
      via[method](req, { deadline: Date.now() + 30_000 }, (err, res) => (err ? reject(err) : resolve(res))),
    );

  /** One direct call: resolves when the tool's JSON answer is read. */
  const direct = () =>
    new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            accept: "application/json",
          },
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            if (res.statusCode !== 200) return reject(new Error(`tool answered ${res.statusCode}`));
            const out = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            if (out.echo?.query !== payload.query) return reject(new Error("tool did not echo"));
            resolve();
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  /** Governed calls go on a chain of their own, a new one every 200 calls. */
  const chains = [];
  let onChain = 200;
  const invoke = async (chain_id, via) => {
    const r = await unary(
      "Invoke",
      {
        chain_id,
        agent_name: "bench-agent",
        action_name: "search",
        payload: struct,
        upstream: opts.upstream,
      },
      via,
    );
    if (r.decision?.policy_decision !== "allow" || !r.forwarded || r.upstream_error)
      throw new Error(`unexpected Invoke result ${JSON.stringify(r)}`);
    if (JSON.parse(r.result_json).echo?.query !== payload.query) throw new Error("tool did not echo");
  };
  const governed = async () => {
    if (onChain >= 200) {
      chains.push((await unary("OpenChain", { name: "bench-cluster" })).chain_id);
      onChain = 0;
    }
    onChain++;
    await invoke(chains.at(-1), client);
  };
  const relayChain = crypto.randomUUID();
  const relay = () => invoke(relayChain, relayClient);
  const goRelay = () => invoke(relayChain, goRelayClient);

  const time = async (fn, into) => {
    const t0 = performance.now();
    await fn();
    into?.push(Math.max(1, Math.round((performance.now() - t0) * 1000)));
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  try {
    // A new Service answers once kube-proxy has programmed it, a moment after its pod is Ready.
    for (let tries = 0; ; tries++) {
      try {
        await direct();
        break;
      } catch (err) {
        if (tries >= 150) throw err;
        await sleep(200);
      }
    }
    for (let i = 0; i < opts.warmup; i++) {
      await time(direct);
      await time(governed);
      await time(relay);
      await time(goRelay);
    }
    const rounds = [];
    for (let r = 0; r < opts.rounds; r++) {
      const round = { direct: [], governed: [], relay: [], goRelay: [] };
      for (let i = 0; i < opts.calls; i++) {
        if (Date.now() > deadline) throw new Error(`run outlived ${opts.deadlineMs} ms`);
        const calls = [
          () => time(direct, round.direct),
          () => time(governed, round.governed),
          () => time(relay, round.relay),
          () => time(goRelay, round.goRelay),
        ];
        const first = (i + r) % calls.length;
        for (const call of [...calls.slice(first), ...calls.slice(0, first)]) {
          await call();
          if (opts.gapMs) await sleep(opts.gapMs);
        }
      }
      rounds.push(round);
    }
    // Completed outside the timed calls: each completion builds and seals a receipt.
    for (const chain_id of chains) await unary("CompleteChain", { chain_id });
    console.log(JSON.stringify({ rounds, chains: chains.length }));
  } catch (err) {
    console.error(String(err?.stack ?? err));
    process.exitCode = 1;
  } finally {
    client.close();
    relayClient.close();
    goRelayClient.close();
    agent.destroy();
  }
} else {
  console.error(`unknown command ${cmd}`);
  process.exit(2);
}
