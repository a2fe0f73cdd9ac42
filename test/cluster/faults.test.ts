/**
 * Faults in real pods (issue 32), in the cluster test/cluster/global-setup.ts brought up. Like
 * bench.test.ts this file installs everything it needs — release `tollgate-faults` (service with 2
 * replicas on PostgreSQL in the cluster, the operator), an Organization, a GovernancePolicy, a
 * counting tool and a governed agent pod — and removes it at the end, whatever happened.
 *  1. a service pod is killed while 20 calls wait for approval: after the approver decides, every
 *     wait resumes through the other replica and each tool call runs exactly once (counted at the
 *     tool);
 *  2. PostgreSQL restarts under a steady load: every call the sidecar acknowledged is in its chain,
 *     every receipt verifies, during the outage the sidecar applies its fail modes (docs/concepts/
 *     sidecar.md), and calls succeed again on their own (the recovery time is logged, not asserted);
 *  3. the network between the agent pod and the service is cut (iptables REJECT in the pod's network
 *     namespace, entered from the kind node): both fail modes apply, calls resume when it heals;
 *  4. a service pod is evicted under load (what `kubectl drain` does): the PodDisruptionBudget
 *     refuses a second eviction meanwhile, and no call fails;
 *  5. the operator's leader is deleted during a burst of 100 GovernancePolicy changes: every
 *     policy ends Synced at its last generation, and leadership moves exactly once.
 * Each load is checked the same way: no acknowledged action lost, every receipt verifying, each
 * call run at most once at the tool. The steps run in order on the one installation. What was observed is in
 * docs/operations/troubleshooting.md ("Faults").
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { status as Status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  CHART_IMAGE_TAGS,
  CLUSTER,
  CRDS,
  helm,
  installPostgres,
  k,
  kJson,
  kTry,
  portForward,
  ROOT,
  run,
  TAG,
  waitFor,
} from "./support.js";

type Obj = Record<string, any>;
const RELEASE = "tollgate-faults";
const NS = { release: "tollgate-faults", agents: "tollgate-faults-agents", tools: "tollgate-faults-tools" };
const ORG = "faults";
const IMAGE = `ghcr.io/tollgate/tollgate:${TAG}`;
const TOOL_URL = `http://tool.${NS.tools}.svc.cluster.local:8080/tool`;
const SERVICE_PODS = "app.kubernetes.io/component=service";
/** Calls that wait for approval while a service pod is killed (issue 32). */
const WAITING = 20;

const log = (s: string) => process.stderr.write(`[faults] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pods = async (ns: string, selector: string): Promise<Obj[]> =>
  (await kJson(["-n", ns, "get", "pods", "-l", selector])).items;
const live = (list: Obj[]) =>
  list.filter(
    (p) =>
      !p.metadata.deletionTimestamp &&
      p.status.conditions?.some((c: Obj) => c.type === "Ready" && c.status === "True"),
  );

/** A script of test/cluster/fixtures as ConfigMap `faults-scripts` in `ns`. */
const scriptConfigMap = (ns: string, file: string) =>
  k([
    "-n",
    ns,
    "create",
    "configmap",
    "faults-scripts",
    `--from-file=${file}=${path.join(ROOT, "test/cluster/fixtures", file)}`,
    `--from-file=gateway.mjs=${path.join(ROOT, "test/cluster/fixtures/gateway.mjs")}`,
  ]);

/** Runs fixtures/faults-agent.mjs in the agent container; its one JSON line. */
async function agent(pod: string, cmd: string, opts: Obj): Promise<Obj> {
  const out = await k(
    [
      "-n",
      NS.agents,
      "exec",
      pod,
      "-c",
      "agent",
      "--",
      "node",
      "/faults/faults-agent.mjs",
      cmd,
      JSON.stringify(opts),
    ],
    { timeoutMs: 900_000 },
  );
  return JSON.parse(out.trim().split("\n").pop()!);
}

/** How often the tool ran each call id (its log lines {"executed": id}). */
async function executions(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await k(["-n", NS.tools, "logs", "deployment/tool", "--tail=-1"])).split("\n")) {
    if (!line.startsWith("{")) continue;
    const id = JSON.parse(line).executed;
    if (typeof id === "string") counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Approval-status polls a service pod has answered (its own /metrics, read in the pod). */
async function approvalRequests(pod: string): Promise<number> {
  const text = await k([
    "-n",
    NS.release,
    "exec",
    pod,
    "--",
    "node",
    "-e",
    'fetch("http://127.0.0.1:8000/metrics").then(r=>r.text()).then(t=>console.log(t))',
  ]);
  return text
    .split("\n")
    .filter(
      (l) =>
        l.startsWith("http_server_request_duration_seconds_count{") &&
        /http_route="[^"]*approval-status/.test(l),
    )
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

/**
 * Removes what this file adds: the governed namespace and the Organization while the operator
 * still runs (finalizers), then the release, leftover finalizers, the other namespaces, and the
 * CRDs when this release installed them. Best effort and bounded.
 */
async function removeEverything(): Promise<void> {
  const quiet = (p: Promise<unknown>) => p.catch(() => undefined);
  const noFinalizers = '{"metadata":{"finalizers":null}}';
  await kTry(["delete", "namespace", NS.agents, "--ignore-not-found", "--wait=false"]);
  await kTry(["delete", "organization", ORG, "--ignore-not-found", "--wait=false"]);
  await quiet(
    waitFor(
      "the governed namespace and the Organization gone",
      async () =>
        (
          await kTry([
            "get",
            `namespace/${NS.agents}`,
            `organization/${ORG}`,
            "--ignore-not-found",
            "-o",
            "name",
          ])
        ).stdout.trim() === "",
      60_000,
      1000,
    ),
  );
  const crd = await kTry([
    "get",
    "crd",
    CRDS[0]!,
    "-o",
    "jsonpath={.metadata.annotations.meta\\.helm\\.sh/release-name}",
  ]);
  await quiet(
    helm(["uninstall", RELEASE, "-n", NS.release, "--ignore-not-found", "--wait", "--timeout", "3m"]),
  );
  await kTry(["-n", NS.agents, "patch", "governancepolicy", "faults", "--type=merge", "-p", noFinalizers]);
  await kTry(["patch", "namespace", NS.agents, "--type=merge", "-p", noFinalizers]);
  await kTry(["patch", "organization", ORG, "--type=merge", "-p", noFinalizers]);
  await kTry(["delete", "namespace", NS.tools, NS.release, "--ignore-not-found", "--wait=false"]);
  if (crd.code === 0 && crd.stdout.trim() === RELEASE) {
    await kTry(["delete", "crd", ...CRDS, "--ignore-not-found", "--timeout=120s"], { timeoutMs: 130_000 });
  }
  await quiet(
    waitFor(
      "the test's namespaces gone",
      async () =>
        (
          await kTry([
            "get",
            "namespace",
            NS.agents,
            NS.tools,
            NS.release,
            "--ignore-not-found",
            "-o",
            "name",
          ])
        ).stdout.trim() === "",
      180_000,
      1000,
    ),
  );
}

const forwards: { close: () => void }[] = [];
afterAll(async () => {
  for (const f of forwards) f.close();
  await removeEverything();
}, 420_000);

describe("faults in a kind cluster", () => {
  let agentPod = "";
  let adminToken = "";

  /**
   * Checks a steady load (faults-agent.mjs `load`) that went through a fault at `tFault` (ms):
   * fail modes as documented (docs/concepts/sidecar.md), nothing forwarded that was refused,
   * each call that passed ran once at the tool, the last calls recorded again, every chain
   * completed with every recorded call among its events, and every receipt verifying offline.
   * Logs what the sidecar answered and when; returns the calls by kind.
   */
  async function checkLoad(
    load: Obj,
    tFault: number,
    what: string,
    sawFault = true,
  ): Promise<{ recorded: Obj[]; failOpen: Obj[]; refused: Obj[] }> {
    const all = load.calls as Obj[];
    const chains = load.chains as Obj[];
    const passed = (c: Obj) => c.ok && c.source !== "fail_mode";
    const recorded = all.filter(passed);
    const failOpen = all.filter((c) => c.ok && c.source === "fail_mode");
    const refused = all.filter((c) => !c.ok);
    const codes = new Map<string, number>();
    for (const c of refused)
      codes.set(`${c.action}:${c.code}`, (codes.get(`${c.action}:${c.code}`) ?? 0) + 1);
    log(
      `${what}: ${all.length} calls, ${recorded.length} recorded, ${failOpen.length} allowed by fail mode, ${refused.length} refused (${[...codes].map(([k, v]) => `${k}×${v}`).join(", ")})`,
    );
    const secs = (t: number) => ((t - tFault) / 1000).toFixed(1);
    const firstBad = all.find((c) => c.at >= tFault && !passed(c));
    const lastBad = all.findLast((c) => !passed(c));
    if (firstBad && lastBad) {
      const back = all.find((c) => c.at > lastBad.at && passed(c));
      log(
        `${what}: failures from ${secs(firstBad.at)} s to ${secs(lastBad.at + lastBad.ms)} s after the fault; first recorded call again at ${back ? secs(back.at) : "-"} s`,
      );
      for (const c of [...refused.slice(0, 2), ...failOpen.slice(0, 1)])
        log(`  e.g. ${c.action} → ${c.ok ? "allowed by fail mode" : `code ${c.code}`}: ${c.details}`);
    }
    // The load saw the fault: otherwise nothing below would be tested.
    if (sawFault) expect(failOpen.length + refused.length).toBeGreaterThan(0);
    // Fail modes: when the service is unreachable or answers 502/503/504, a `lookup` (category
    // default: allow) is forwarded and flagged, nothing recorded, and a `pay` (financial: deny) is
    // refused UNAVAILABLE; any other answer (a 500 included) is refused (INTERNAL). Nothing
    // refused is forwarded.
    for (const c of failOpen)
      expect(c, JSON.stringify(c)).toMatchObject({ action: "lookup", forwarded: true, event_id: null });
    for (const c of refused) {
      expect(c.forwarded, JSON.stringify(c)).toBe(false);
      expect([Status.INTERNAL, Status.UNAVAILABLE], JSON.stringify(c)).toContain(c.code);
      if (c.code === Status.UNAVAILABLE) expect(c.action, JSON.stringify(c)).toBe("pay");
    }
    // Calls succeed again on their own: the last ones are recorded.
    expect(all.slice(-10).every((c) => passed(c) && c.event_id)).toBe(true);
    // At most once at the tool: a refused call never ran there, every other call once.
    const counts = await executions();
    for (const c of refused) expect(counts.get(c.id) ?? 0, c.id).toBe(0);
    for (const c of [...recorded, ...failOpen]) expect(counts.get(c.id), c.id).toBe(1);

    // No acknowledged action lost: every recorded call is an event of its chain.
    expect(chains.every((c) => c.completed)).toBe(true);
    const pf = await portForward(NS.release, `svc/${RELEASE}`, 8000);
    forwards.push(pf);
    const { api_key: key } = await api(
      pf.url,
      adminToken,
      "POST",
      `/v1/admin/organizations/${ORG}/api-keys`,
      {
        name: `faults-${Date.now()}`,
        role: "admin",
      },
    );
    for (const { chain_id } of chains) {
      const chain = await api(pf.url, key, "GET", `/v1/chains/${chain_id}`);
      const events = new Set((chain.events as Obj[]).map((e) => e.event_id));
      for (const c of recorded.filter((x) => x.chain_id === chain_id))
        expect(events.has(c.event_id), c.id).toBe(true);
    }
    // Every receipt (this load's chains among them) verifies offline against the published keys.
    const exported = await api(pf.url, key, "GET", "/v1/receipts/export");
    const receipts = new Set((exported.receipts as Obj[]).map((r) => r.chain_id));
    for (const { chain_id } of chains) expect(receipts.has(chain_id), chain_id).toBe(true);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "tollgate-faults-")), "receipts-export.json");
    writeFileSync(file, JSON.stringify(exported));
    const verify = await run(process.execPath, [
      path.join(ROOT, "bin/tollgate.mjs"),
      "verify",
      file,
      "--jwks",
      `${pf.url}/.well-known/tollgate/receipt-keys.json`,
    ]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/VALID/);
    pf.close();
    return { recorded, failOpen, refused };
  }

  /**
   * Starts a steady load (faults-agent.mjs `load`, call ids PREFIX-i) for `durationMs`, one call
   * every `gapMs`, and returns once it has run 15 s before any fault; `load` resolves to its result.
   */
  async function steadyLoad(
    prefix: string,
    durationMs: number,
    gapMs: number,
  ): Promise<{ load: Promise<Obj> }> {
    const load = agent(agentPod, "load", { durationMs, gapMs, prefix, upstream: "tool", perChain: 25 });
    await sleep(15_000);
    return { load };
  }

  /** A port-forward to service pod `pod` and an admin API key of the organization through it. */
  async function serviceApi(pod: string): Promise<{ base: string; key: string }> {
    const pf = await portForward(NS.release, `pod/${pod}`, 8000);
    forwards.push(pf);
    const { api_key } = await api(pf.url, adminToken, "POST", `/v1/admin/organizations/${ORG}/api-keys`, {
      name: `faults-${Date.now()}`,
      role: "admin",
    });
    return { base: pf.url, key: api_key };
  }

  beforeAll(async () => {
    await k(["get", "--raw", "/readyz"]);
    if ((await kTry(["get", "namespace", NS.release, "--ignore-not-found", "-o", "name"])).stdout.trim()) {
      log("removing what an earlier run left");
      await removeEverything();
    }
    const crdsPresent = (await kTry(["get", "crd", CRDS[0]!])).code === 0;
    await k(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          { apiVersion: "v1", kind: "Namespace", metadata: { name: NS.release } },
          { apiVersion: "v1", kind: "Namespace", metadata: { name: NS.tools } },
          {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: {
              name: NS.agents,
              labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": ORG },
            },
          },
        ],
      }),
    });
    await installPostgres(NS.release, "tollgate-faults");
    const t0 = Date.now();
    await helm([
      "install",
      RELEASE,
      path.join(ROOT, "charts/tollgate"),
      "-n",
      NS.release,
      ...CHART_IMAGE_TAGS,
      "--set",
      "database.existingSecret=tollgate-postgres",
      "--set",
      "service.replicas=2",
      "--set",
      `crds.enabled=${!crdsPresent}`,
      "--wait",
      "--timeout",
      "6m",
    ]);
    log(
      `helm install ${RELEASE} (2 service replicas, PostgreSQL): ${Math.round((Date.now() - t0) / 1000)} s`,
    );
    adminToken = Buffer.from(
      (await kJson(["-n", NS.release, "get", "secret", `${RELEASE}-secrets`])).data["admin-token"],
      "base64",
    ).toString();
    await k(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "tollgate.dev/v1alpha1",
            kind: "Organization",
            metadata: { name: ORG },
            spec: {
              slug: ORG,
              displayName: "Faults",
              runawayLimits: { maxEvents: 0, maxDurationSeconds: 0, maxTokens: 0 },
            },
          },
          {
            apiVersion: "tollgate.dev/v1alpha1",
            kind: "GovernancePolicy",
            metadata: { name: "faults", namespace: NS.agents },
            spec: {
              organizationRef: { name: ORG },
              customRules: [
                {
                  name: "wire-needs-approval",
                  match: { actionName: "wire_funds" },
                  outcome: "require_approval",
                  reason: "Wires need a human",
                },
              ],
            },
          },
        ],
      }),
    });
    for (const cond of ["Ready", "Synced"]) {
      await k(
        ["-n", NS.agents, "wait", `--for=condition=${cond}`, "governancepolicy/faults", "--timeout=180s"],
        {
          timeoutMs: 190_000,
        },
      );
    }
    // The tool (not governed) and the agent (governed: the webhook injects the sidecar).
    await scriptConfigMap(NS.tools, "counting-tool.mjs");
    await scriptConfigMap(NS.agents, "faults-agent.mjs");
    const deployment = (
      ns: string,
      name: string,
      script: string,
      annotations: Obj = {},
      ports: Obj[] = [],
    ) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: ns },
      spec: {
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name }, annotations },
          spec: {
            terminationGracePeriodSeconds: 2,
            containers: [
              {
                name,
                image: IMAGE,
                imagePullPolicy: "IfNotPresent",
                command: ["node", `/faults/${script}`, "serve"],
                ports,
                volumeMounts: [{ name: "scripts", mountPath: "/faults" }],
                resources: { requests: { cpu: "10m", memory: "64Mi" } },
              },
            ],
            volumes: [{ name: "scripts", configMap: { name: "faults-scripts" } }],
          },
        },
      },
    });
    await k(["apply", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [
          deployment(NS.tools, "tool", "counting-tool.mjs", {}, [{ containerPort: 8080 }]),
          {
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "tool", namespace: NS.tools },
            spec: { selector: { app: "tool" }, ports: [{ port: 8080 }] },
          },
          deployment(NS.agents, "agent", "faults-agent.mjs", {
            "tollgate.dev/agent-name": "faults-agent",
            "tollgate.dev/upstreams": JSON.stringify([{ name: "tool", type: "http", url: TOOL_URL }]),
          }),
        ],
      }),
    });
    for (const [ns, name] of [
      [NS.tools, "tool"],
      [NS.agents, "agent"],
    ] as const) {
      await k(["-n", ns, "rollout", "status", `deployment/${name}`, "--timeout=240s"], {
        timeoutMs: 250_000,
      });
    }
    const [pod] = live(await pods(NS.agents, "app=agent"));
    expect(pod?.spec.initContainers?.[0]?.name).toBe("tollgate-sidecar");
    agentPod = pod!.metadata.name;
  }, 900_000);

  it(`a service pod killed while ${WAITING} calls wait for approval: every wait resumes through the other replica, each tool call runs once`, async () => {
    const services = live(await pods(NS.release, SERVICE_PODS));
    expect(services).toHaveLength(2);
    const t0 = Date.now();
    const calls = agent(agentPod, "many", {
      n: WAITING,
      prefix: "kill",
      action: "wire_funds",
      upstream: "tool",
    });
    let settled = false;
    void calls.finally(() => (settled = true));
    // Reviewer's view through each replica (port-forwards to the pods, not the Service).
    const apis = await Promise.all(services.map((p) => serviceApi(p.metadata.name)));
    const pending = async () =>
      ((await api(apis[0]!.base, apis[0]!.key, "GET", "/v1/approvals?status=pending")).approvals as Obj[]) ??
      [];
    await waitFor(
      `${WAITING} pending approvals`,
      async () => (await pending()).length === WAITING,
      300_000,
      1000,
    );
    log(`${WAITING} calls waiting for approval after ${Math.round((Date.now() - t0) / 1000)} s`);
    await sleep(6000); // at least one long-poll round of every wait (the sidecar polls every 5 s)
    expect(settled).toBe(false);
    // Kill the replica that served the sidecar's approval polls (SIGKILL, no graceful drain).
    const served = await Promise.all(services.map((p) => approvalRequests(p.metadata.name)));
    const victimIndex = served[0]! >= served[1]! ? 0 : 1;
    const victim = services[victimIndex]!.metadata.name;
    const survivor = apis[1 - victimIndex]!;
    log(
      `approval requests per replica: ${services.map((p, i) => `${p.metadata.name}=${served[i]}`).join(", ")}; killing ${victim}`,
    );
    expect(served[victimIndex]).toBeGreaterThan(0);
    await k(["-n", NS.release, "delete", "pod", victim, "--grace-period=0", "--force"]);
    await sleep(2000);
    const waiting =
      ((await api(survivor.base, survivor.key, "GET", "/v1/approvals?status=pending")).approvals as Obj[]) ??
      [];
    expect(waiting).toHaveLength(WAITING);
    expect(settled).toBe(false);
    const tDecide = Date.now();
    for (const a of waiting) {
      const decided = await api(
        survivor.base,
        survivor.key,
        "POST",
        `/v1/approvals/${a.approval_id}/decision`,
        {
          decision: "approve",
          notes: "approved after a service pod was killed",
        },
      );
      expect(decided.status).toBe("approved");
    }
    const result = await calls;
    log(
      `all ${WAITING} waits resumed ${((Date.now() - tDecide) / 1000).toFixed(1)} s after the first decision`,
    );
    for (const c of result.calls as Obj[]) {
      expect(c, JSON.stringify(c)).toMatchObject({ ok: true, source: "human_approval", forwarded: true });
    }
    // Each call ran exactly once at the tool.
    const counts = await executions();
    const ids = (result.calls as Obj[]).map((c) => c.id as string);
    expect(ids.map((id) => [id, counts.get(id)])).toEqual(ids.map((id) => [id, 1]));
    expect([...counts.keys()].filter((id) => id.startsWith("kill-")).sort()).toEqual([...ids].sort());
    await k(["-n", NS.release, "rollout", "status", "deployment/tollgate-faults", "--timeout=240s"], {
      timeoutMs: 250_000,
    });
  });

  it("PostgreSQL restarts under a steady load: no acknowledged action lost, receipts verify, fail modes apply, calls recover", async () => {
    const [pg] = live(await pods(NS.release, "app=postgres"));
    const pgPod = pg!.metadata.name;
    const restartsBefore = pg!.status.containerStatuses[0].restartCount as number;
    const { load } = await steadyLoad("pg", 90_000, 200);
    // Fast shutdown of the postmaster (PID 1): the container exits and the kubelet restarts it in
    // the same pod, on the same data (emptyDir outlives container restarts).
    const tStop = Date.now();
    await k(["-n", NS.release, "exec", pgPod, "--", "sh", "-c", "kill -INT 1"]);
    await waitFor(
      "PostgreSQL restarted and Ready",
      async () => {
        const p = await kJson(["-n", NS.release, "get", "pod", pgPod]);
        const s = p.status.containerStatuses[0];
        return s.restartCount > restartsBefore && s.ready;
      },
      240_000,
      500,
    );
    log(`PostgreSQL stopped → its pod Ready again: ${((Date.now() - tStop) / 1000).toFixed(1)} s`);
    const { refused } = await checkLoad(await load, tStop, "PostgreSQL restart");
    // A query on a connection PostgreSQL closed is a 500 of the service: refused INTERNAL.
    expect(refused.some((c) => c.code === Status.INTERNAL)).toBe(true);
  });
  it("the network between the agent pod and the service cut (iptables in the pod's network namespace): fail modes apply, calls resume when healed", async () => {
    // The pod's network namespace, entered from the kind node through its agent container's PID.
    const pod = await kJson(["-n", NS.agents, "get", "pod", agentPod]);
    const containerId = (pod.status.containerStatuses as Obj[])
      .find((c) => c.name === "agent")!
      .containerID.replace(/^containerd:\/\//, "");
    const node = `${CLUSTER}-control-plane`;
    const onNode = (args: string[]) => run("docker", ["exec", node, ...args]);
    const tasks = await onNode(["ctr", "-n", "k8s.io", "tasks", "ls"]);
    const pid = tasks.stdout
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .find((f) => f[0] === containerId)?.[1];
    expect(pid, tasks.stdout + tasks.stderr).toMatch(/^\d+$/);
    // Every address of the service from inside the pod: the Service's ClusterIP and its pods' IPs.
    const svc = await kJson(["-n", NS.release, "get", "service", RELEASE]);
    const targets = [
      svc.spec.clusterIP as string,
      ...live(await pods(NS.release, SERVICE_PODS)).map((p) => p.status.podIP as string),
    ];
    const iptables = (op: "-I" | "-D") =>
      Promise.all(
        targets.map(async (ip) => {
          const r = await onNode([
            "nsenter",
            "-t",
            pid!,
            "-n",
            "iptables",
            op,
            "OUTPUT",
            "-d",
            ip,
            "-j",
            "REJECT",
          ]);
          expect(r.code, r.stderr).toBe(0);
        }),
      );
    const { load } = await steadyLoad("cut", 60_000, 250);
    const tCut = Date.now();
    await iptables("-I");
    log(`cut: REJECT from pod ${agentPod} (pid ${pid}) to ${targets.join(", ")}`);
    await sleep(20_000);
    await iptables("-D");
    log(`healed after ${((Date.now() - tCut) / 1000).toFixed(1)} s`);
    const { failOpen, refused } = await checkLoad(await load, tCut, "network cut");
    // Unreachable: both fail modes applied, as documented.
    expect(failOpen.length).toBeGreaterThan(0);
    expect(refused.some((c) => c.action === "pay" && c.code === Status.UNAVAILABLE)).toBe(true);
  });
  it("a service pod evicted under load: the PodDisruptionBudget refuses a second eviction, calls go on", async () => {
    const pdb = await kJson(["-n", NS.release, "get", "poddisruptionbudget", RELEASE]);
    expect(pdb.spec.maxUnavailable).toBe(1);
    await waitFor(
      "the PodDisruptionBudget to allow one disruption",
      async () =>
        (await kJson(["-n", NS.release, "get", "poddisruptionbudget", RELEASE])).status.disruptionsAllowed ===
        1,
      120_000,
      1000,
    );
    const [first, second] = live(await pods(NS.release, SERVICE_PODS));
    /** POST an Eviction of `pod` (what `kubectl drain` does); kubectl's exit status and output. */
    const evict = (pod: string) =>
      kTry(["create", "--raw", `/api/v1/namespaces/${NS.release}/pods/${pod}/eviction`, "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "policy/v1",
          kind: "Eviction",
          metadata: { name: pod, namespace: NS.release },
        }),
      });
    const { load } = await steadyLoad("evict", 60_000, 250);
    const tEvict = Date.now();
    const evicted = await evict(first!.metadata.name);
    expect(evicted.code, evicted.stderr).toBe(0);
    // The other replica may not go while the first is away.
    const refusedEviction = await evict(second!.metadata.name);
    expect(refusedEviction.code).not.toBe(0);
    expect(refusedEviction.stderr).toMatch(/disruption budget/);
    log(
      `evicted ${first!.metadata.name}; eviction of ${second!.metadata.name} refused: ${refusedEviction.stderr.trim()}`,
    );
    await k(["-n", NS.release, "rollout", "status", `deployment/${RELEASE}`, "--timeout=240s"], {
      timeoutMs: 250_000,
    });
    log(`replacement Ready ${((Date.now() - tEvict) / 1000).toFixed(1)} s after the eviction`);
    // The evicted replica drains (SIGTERM) while the other serves: no call of the load failed, so
    // none needed the caller's retry or a fail mode.
    const { failOpen, refused } = await checkLoad(await load, tEvict, "eviction", false);
    expect([...failOpen, ...refused]).toEqual([]);
  });
  it("the operator's leader deleted during a burst of 100 GovernancePolicy changes: every policy ends Synced at its last generation, leadership moves once", async () => {
    const lease = () => kJson(["-n", NS.release, "get", "lease", `${RELEASE}-operator`]);
    const before = await lease();
    const leader: string = before.spec.holderIdentity;
    const names = Array.from({ length: 10 }, (_, i) => `burst-${i}`);
    /** Round `r` of the burst: one change to each of the 10 policies (the first creates them). */
    const round = (r: number) =>
      k(["apply", "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: names.map((name) => ({
            apiVersion: "tollgate.dev/v1alpha1",
            kind: "GovernancePolicy",
            metadata: { name, namespace: NS.agents },
            spec: { organizationRef: { name: ORG }, thresholds: { bulkOperation: 100 + r } },
          })),
        }),
      });
    const t0 = Date.now();
    for (let r = 0; r < 10; r++) {
      await round(r);
      if (r === 3) {
        const leaderPod = live(await pods(NS.release, "app.kubernetes.io/component=operator")).find((p) =>
          leader.startsWith(p.metadata.name),
        );
        expect(leaderPod, `lease holder ${leader}`).toBeDefined();
        await k(["-n", NS.release, "delete", "pod", leaderPod!.metadata.name, "--wait=false"]);
        log(`deleted the operator's leader ${leaderPod!.metadata.name} after 40 of 100 changes`);
      }
    }
    const synced = async () => {
      const items = (await kJson(["-n", NS.agents, "get", "governancepolicies"])).items as Obj[];
      return names.every((name) => {
        const gp = items.find((i) => i.metadata.name === name);
        return (
          gp?.status?.observedGeneration === gp?.metadata.generation &&
          gp?.status?.conditions?.some((c: Obj) => c.type === "Synced" && c.status === "True")
        );
      });
    };
    await waitFor("every burst policy Synced at its last generation", synced, 300_000, 1000);
    log(`100 changes Synced ${((Date.now() - t0) / 1000).toFixed(1)} s after the first`);
    const items = (await kJson(["-n", NS.agents, "get", "governancepolicies"])).items as Obj[];
    for (const name of names) {
      const gp = items.find((i) => i.metadata.name === name)!;
      expect(gp.metadata.generation, name).toBe(10);
      expect(gp.spec.thresholds.bulkOperation).toBe(109);
    }
    // The same content gives the same service version: one final version for the 10 policies.
    expect(
      new Set(names.map((n) => items.find((i) => i.metadata.name === n)!.status.serviceVersion)).size,
    ).toBe(1);
    const after = await lease();
    expect(after.spec.holderIdentity).not.toBe(leader);
    expect(after.spec.leaseTransitions ?? 0).toBe((before.spec.leaseTransitions ?? 0) + 1);
    await k(["-n", NS.agents, "delete", "governancepolicies", ...names, "--wait=true", "--timeout=120s"], {
      timeoutMs: 130_000,
    });
  });
});
