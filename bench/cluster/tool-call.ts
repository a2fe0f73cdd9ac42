/**
 * Phase 1 of bench/cluster: a governed tool call pod to pod. The tool (bench/cluster/echo.mjs) runs
 * in a Deployment behind a Service in the plain namespace; the agent pod, in the namespace
 * labelled for injection, gets the sidecar from the webhook with the tool as its http upstream
 * `echo`. The load (bench/cluster/load.mjs) runs inside the agent container and times the same
 * call made directly to the tool's Service and through the sidecar's gRPC Invoke, interleaved.
 */
import path from "node:path";
import { k, kJson, ROOT, TAG } from "../../test/cluster/support.js";
import { progress } from "../lib/report.js";
import { NS } from "./cluster.js";

const IMAGE = `ghcr.io/tollgate/tollgate:${TAG}`;
const TOOL_URL = `http://echo.${NS.plain}.svc.cluster.local:8080/tool`;
const AGENT_POD = "bench-agent";

/** Options of one load run inside the agent pod (see load.mjs). */
export interface LoadOptions {
  calls: number;
  rounds: number;
  warmup: number;
  gapMs: number;
  deadlineMs: number;
}

/** Latencies in µs of one round, per kind. */
export interface LoadRound {
  direct: number[];
  governed: number[];
}

/** The script of bench/cluster/`file` as a ConfigMap `bench-scripts` in `ns`. */
const scripts = (ns: string, file: string) =>
  k([
    "-n",
    ns,
    "create",
    "configmap",
    "bench-scripts",
    `--from-file=${file}=${path.join(ROOT, "bench/cluster", file)}`,
  ]);

/** Starts the tool and the governed agent pod; resolves when both are Ready. */
export async function startToolAndAgent(): Promise<void> {
  await scripts(NS.plain, "echo.mjs");
  await scripts(NS.agents, "load.mjs");
  const mount = { name: "scripts", mountPath: "/bench" };
  const volume = { name: "scripts", configMap: { name: "bench-scripts" } };
  await k(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "echo", namespace: NS.plain },
          spec: {
            selector: { matchLabels: { app: "echo" } },
            template: {
              metadata: { labels: { app: "echo" } },
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [
                  {
                    name: "echo",
                    image: IMAGE,
                    command: ["node", "/bench/echo.mjs"],
                    ports: [{ containerPort: 8080 }],
                    readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
                    volumeMounts: [mount],
                  },
                ],
                volumes: [volume],
              },
            },
          },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "echo", namespace: NS.plain },
          spec: { selector: { app: "echo" }, ports: [{ port: 8080 }] },
        },
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
                volumeMounts: [mount],
              },
            ],
            volumes: [volume],
          },
        },
      ],
    }),
  });
  await k(["-n", NS.plain, "rollout", "status", "deployment/echo", "--timeout=180s"], { timeoutMs: 200_000 });
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
