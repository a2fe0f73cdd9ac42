/**
 * Phase 1 of bench/cluster: a governed tool call pod to pod. The tool (bench/cluster/echo.mjs) runs
 * in a Deployment behind a Service in the plain namespace; the agent pod, in the namespace
 * labelled for injection, gets the sidecar from the webhook with the tool as its http upstream
 * `echo`. The load (bench/cluster/load.mjs) runs inside the agent container and times the same
 * call made directly to the tool's Service, through the sidecar's gRPC Invoke, and through the
 * minimal relay (the floor: bench/cluster/minimal-relay.mjs, a second container of the agent pod,
 * recording through bench/cluster/minimal-decision.mjs in its own pod on the same PostgreSQL),
 * and through the Go relay floor (bench/sidecar-overhead/go-relay, a third container of the
 * agent pod, to the same decision server and tool), interleaved.
 */
import path from "node:path";
import { GO_RELAY_IMAGE, k, kJson, ROOT, TAG } from "../../test/cluster/support.js";
import { progress } from "../lib/report.js";
import { NS, PG_PASSWORD } from "./cluster.js";

const IMAGE = `ghcr.io/tollgate/tollgate:${TAG}`;
const TOOL_URL = `http://echo.${NS.plain}.svc.cluster.local:8080/tool`;
const AGENT_POD = "bench-agent";
const DATABASE_URL = `postgres://tollgate:${PG_PASSWORD}@postgres.${NS.release}.svc.cluster.local:5432/tollgate`;
const DECISION_URL = `http://minimal-decision.${NS.release}.svc.cluster.local:8080`;

/** Options of one load run inside the agent pod (see load.mjs). */
export interface LoadOptions {
  calls: number;
  rounds: number;
  warmup: number;
  gapMs: number;
  deadlineMs: number;
}

/** Latencies in µs of one round, per kind (relay: the minimal relay, the floor; goRelay: the Go relay). */
export interface LoadRound {
  direct: number[];
  governed: number[];
  relay: number[];
  goRelay: number[];
}

/** The in-pod gRPC definition loader the scripts import (test/cluster/fixtures/gateway.mjs). */
const GATEWAY = path.join(ROOT, "test/cluster/fixtures/gateway.mjs");

/** The scripts bench/cluster/`files` (and gateway.mjs) as a ConfigMap `bench-scripts` in `ns`. */
const scripts = (ns: string, ...files: string[]) =>
  k([
    "-n",
    ns,
    "create",
    "configmap",
    "bench-scripts",
    ...files.map((file) => `--from-file=${file}=${path.join(ROOT, "bench/cluster", file)}`),
    `--from-file=gateway.mjs=${GATEWAY}`,
  ]);

/** A one-container Deployment + Service `name` in `ns` running bench/cluster/`script` on `port`. */
function scriptService(o: { ns: string; name: string; script: string; port: number; env?: object[] }) {
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: o.name, namespace: o.ns },
      spec: {
        selector: { matchLabels: { app: o.name } },
        template: {
          metadata: { labels: { app: o.name } },
          spec: {
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: o.name,
                image: IMAGE,
                command: ["node", `/bench/${o.script}`],
                env: o.env ?? [],
                ports: [{ containerPort: o.port }],
                readinessProbe: { tcpSocket: { port: o.port }, periodSeconds: 1 },
                volumeMounts: [MOUNT],
              },
            ],
            volumes: [VOLUME],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: o.name, namespace: o.ns },
      spec: { selector: { app: o.name }, ports: [{ port: o.port }] },
    },
  ];
}
const MOUNT = { name: "scripts", mountPath: "/bench" };
const VOLUME = { name: "scripts", configMap: { name: "bench-scripts" } };

/** Starts the tool and the governed agent pod; resolves when both are Ready. */
export async function startToolAndAgent(): Promise<void> {
  await scripts(NS.plain, "echo.mjs");
  await scripts(NS.release, "minimal-decision.mjs");
  await scripts(NS.agents, "load.mjs", "minimal-relay.mjs");
  await k(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        ...scriptService({ ns: NS.plain, name: "echo", script: "echo.mjs", port: 8080 }),
        ...scriptService({
          ns: NS.release,
          name: "minimal-decision",
          script: "minimal-decision.mjs",
          port: 8080,
          env: [{ name: "DATABASE_URL", value: DATABASE_URL }],
        }),
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: AGENT_POD,
            namespace: NS.agents,
            labels: { app: AGENT_POD },
            annotations: {
              "tollgate.dev/agent-name": "bench-agent",
              "tollgate.dev/upstreams": JSON.stringify([{ name: "echo", type: "http", url: TOOL_URL }]),
            },
          },
          spec: {
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name: "agent",
                image: IMAGE,
                command: ["node", "/bench/load.mjs", "serve"],
                resources: { requests: { cpu: "10m", memory: "64Mi" } },
                volumeMounts: [MOUNT],
              },
              {
                name: "relay",
                image: IMAGE,
                command: ["node", "/bench/minimal-relay.mjs"],
                env: [
                  { name: "DECISION_URL", value: DECISION_URL },
                  { name: "UPSTREAM_URL", value: TOOL_URL },
                ],
                resources: { requests: { cpu: "10m", memory: "64Mi" } },
                readinessProbe: { tcpSocket: { port: 50061 }, periodSeconds: 1 },
                volumeMounts: [MOUNT],
              },
              {
                name: "go-relay",
                image: GO_RELAY_IMAGE,
                imagePullPolicy: "Never",
                env: [
                  { name: "DECISION_URL", value: DECISION_URL },
                  { name: "UPSTREAM_URL", value: TOOL_URL },
                  { name: "PORT", value: "50062" },
                ],
                resources: { requests: { cpu: "10m", memory: "16Mi" } },
                readinessProbe: { tcpSocket: { port: 50062 }, periodSeconds: 1 },
              },
            ],
            volumes: [VOLUME],
          },
        },
      ],
    }),
  });
  for (const [ns, name] of [
    [NS.plain, "echo"],
    [NS.release, "minimal-decision"],
  ])
    await k(["-n", ns!, "rollout", "status", `deployment/${name}`, "--timeout=180s"], { timeoutMs: 200_000 });
  await k(["-n", NS.agents, "wait", "--for=condition=Ready", `pod/${AGENT_POD}`, "--timeout=180s"], {
    timeoutMs: 200_000,
  });
  const pod = await kJson(["-n", NS.agents, "get", "pod", AGENT_POD]);
  const sidecars = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].filter(
    (c: { name: string }) => c.name === "tollgate-sidecar",
  );
  if (sidecars.length !== 1)
    throw new Error(`agent pod has ${sidecars.length} injected sidecars, expected 1`);
  progress(`agent pod ${NS.agents}/${AGENT_POD} Ready with the injected sidecar; tool at ${TOOL_URL}`);
}

/** Runs load.mjs in the agent container (kubectl exec); resolves with its rounds. */
export async function runLoad(o: LoadOptions): Promise<{ rounds: LoadRound[]; chains: number }> {
  const opts = { ...o, url: TOOL_URL, upstream: "echo" };
  const out = await k(
    [
      "-n",
      NS.agents,
      "exec",
      AGENT_POD,
      "-c",
      "agent",
      "--",
      "node",
      "/bench/load.mjs",
      "run",
      JSON.stringify(opts),
    ],
    { timeoutMs: o.deadlineMs + 30_000 },
  );
  return JSON.parse(out.trim().split("\n").pop()!);
}
