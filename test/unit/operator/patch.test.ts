import { describe, expect, it } from "vitest";
import {
  agentNameOf,
  applyPatch,
  buildInjection,
  type NamespaceLike,
  type PatchOperation,
  type PodLike,
  skipReason,
  takenPortNames,
} from "../../../operator/webhook/patch.js";
import {
  DEFAULT_SIDECAR_RESOURCES,
  type InjectionConfig,
  SIDECAR_NODE_OPTIONS,
} from "../../../operator/webhook/sidecar.js";

const cfg: InjectionConfig = {
  image: "ghcr.io/tollgate/sidecar:0.1.0",
  serviceUrl: "http://tollgate.tollgate-system:8000",
};
const governed: NamespaceLike = {
  name: "agents",
  labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": "acme" },
};
const plain: NamespaceLike = { name: "default", labels: {} };
const pod = (meta: PodLike["metadata"] = {}, spec: PodLike["spec"] = {}): PodLike => ({
  metadata: { name: "agent-1", ...meta },
  spec: { containers: [{ name: "agent" }], ...spec },
});
const sidecarOf = (p: PodLike): Record<string, any> =>
  [...((p.spec as any).containers ?? []), ...((p.spec as any).initContainers ?? [])].find(
    (x: { name: string }) => x.name === "tollgate-sidecar",
  );
const envOf = (p: PodLike) => {
  const containers = [...((p.spec as any).containers ?? []), ...((p.spec as any).initContainers ?? [])];
  const c = containers.find((x: { name: string }) => x.name === "tollgate-sidecar");
  return Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
};

describe("skipReason (which pods get the sidecar)", () => {
  it.each([
    ["a pod in a labelled namespace", pod(), governed, null],
    [
      "an annotated pod in a plain namespace",
      pod({ annotations: { "tollgate.dev/inject": "true" } }),
      plain,
      null,
    ],
    ["a plain pod in a plain namespace", pod(), plain, /not selected/],
    [
      "an opted-out pod in a labelled namespace",
      pod({ annotations: { "tollgate.dev/inject": "false" } }),
      governed,
      /opted out/,
    ],
    [
      "an already injected pod",
      pod({ annotations: { "tollgate.dev/injected": "true" } }),
      governed,
      /already injected/,
    ],
    [
      "a pod that already has the container",
      pod({}, { containers: [{ name: "tollgate-sidecar" }] }),
      governed,
      /already has/,
    ],
    [
      "a pod with the native sidecar",
      pod({}, { containers: [{ name: "a" }], initContainers: [{ name: "tollgate-sidecar" }] }),
      governed,
      /already has/,
    ],
  ] as const)("%s", (_what, p, ns, expected) => {
    const r = skipReason(p, ns);
    if (expected === null) expect(r).toBeNull();
    else expect(r).toMatch(expected);
  });
});

describe("agentNameOf", () => {
  it.each([
    [
      "the annotation",
      { name: "p", annotations: { "tollgate.dev/agent-name": "billing" }, labels: { app: "x" } },
      "billing",
    ],
    [
      "the app.kubernetes.io/name label",
      { name: "p", labels: { "app.kubernetes.io/name": "research", app: "x" } },
      "research",
    ],
    ["the app label", { name: "p", labels: { app: "writer" } }, "writer"],
    [
      "generateName without the pod-template-hash",
      { generateName: "support-bot-5d9c7b8f6-", labels: { "pod-template-hash": "5d9c7b8f6" } },
      "support-bot",
    ],
    ["generateName without a trailing dash", { generateName: "job-runner-" }, "job-runner"],
    ["the pod name", { name: "lonely" }, "lonely"],
  ])("from %s", (_what, meta, expected) => {
    expect(agentNameOf({ metadata: meta })).toBe(expected);
  });
});

/** `op path` of each operation not inside /spec/containers/0 (where the sidecar replaces the agent's fields). */
const outsideFirstContainer = (patch: readonly PatchOperation[]) =>
  patch.filter((o) => !o.path.startsWith("/spec/containers/0/")).map((o) => `${o.op} ${o.path}`);

describe("buildInjection", () => {
  it("injects container, volume, env and the marker into a pod without annotations or volumes", () => {
    const p: PodLike = {
      metadata: { name: "a1", labels: { app: "payer" } },
      spec: { containers: [{ name: "agent" }] },
    };
    const d = buildInjection(p, governed, cfg);
    expect(d.kind).toBe("inject");
    if (d.kind !== "inject") return;
    // The diff of the injected copy: what the pod lacked is added whole, a key is escaped; the
    // sidecar takes index 0 (field by field) and the agent moves to the old length.
    expect(outsideFirstContainer(d.patch)).toEqual([
      "add /spec/containers/1",
      "add /spec/volumes",
      "add /metadata/labels/tollgate.dev~1sidecar",
      "add /metadata/annotations",
    ]);
    const out = applyPatch(p, d.patch) as any;
    expect(out.metadata.annotations).toEqual({
      "tollgate.dev/injected": "true",
      "kubectl.kubernetes.io/default-container": "agent",
    });
    // The label the chart's PodMonitor selects; the pod's own labels stay.
    expect(out.metadata.labels).toEqual({ app: "payer", "tollgate.dev/sidecar": "injected" });
    expect(out.spec.containers.map((c: { name: string }) => c.name)).toEqual(["tollgate-sidecar", "agent"]);
    expect(sidecarOf(out).imagePullPolicy).toBe("IfNotPresent");
    expect(sidecarOf(out).resources).toEqual(DEFAULT_SIDECAR_RESOURCES);
    expect(sidecarOf(out).ports).toEqual([
      { name: "grpc", containerPort: 50051, protocol: "TCP" },
      { name: "http-metrics", containerPort: 9091, protocol: "TCP" },
    ]);
    const sidecar = out.spec.containers[0];
    expect(sidecar.image).toBe(cfg.image);
    expect(sidecar.command).toBeUndefined();
    // The pod's identity: a projected service account token (audience tollgate), in the sidecar only.
    expect(sidecar.volumeMounts).toEqual([
      { name: "tollgate-identity", mountPath: "/var/run/tollgate/identity", readOnly: true },
    ]);
    expect(out.spec.containers[1].volumeMounts).toBeUndefined();
    expect(out.spec.volumes).toEqual([
      {
        name: "tollgate-identity",
        projected: {
          defaultMode: 0o444,
          sources: [{ serviceAccountToken: { audience: "tollgate", expirationSeconds: 600, path: "token" } }],
        },
      },
    ]);
    expect(envOf(out)).toEqual({
      TOLLGATE_SERVICE_URL: "http://tollgate.tollgate-system:8000",
      TOLLGATE_SERVICE_TOKEN_FILE: "/var/run/tollgate/identity/token",
      TOLLGATE_ORGANIZATION: "acme",
      TOLLGATE_AGENT_NAME: "payer",
      TOLLGATE_GRPC_ADDRESS: "127.0.0.1:50051",
      TOLLGATE_HTTP_ADDRESS: "127.0.0.1:9090",
      TOLLGATE_PROBE_ADDRESS: "0.0.0.0:9091",
      NODE_OPTIONS: "--max-semi-space-size=1 --max-old-space-size=128",
    });
  });

  it("with auth apiKey mounts the namespace's API-key Secret instead of a token", () => {
    const p: PodLike = { metadata: { name: "k1" }, spec: { containers: [{ name: "agent" }] } };
    const d = buildInjection(p, governed, { ...cfg, auth: "apiKey" });
    if (d.kind !== "inject") throw new Error(d.kind);
    const out = applyPatch(p, d.patch) as any;
    expect(sidecarOf(out).volumeMounts).toEqual([
      { name: "tollgate-api-key", mountPath: "/var/run/tollgate", readOnly: true },
    ]);
    expect(out.spec.volumes).toEqual([
      {
        name: "tollgate-api-key",
        secret: {
          secretName: "tollgate-api-key",
          items: [{ key: "api-key", path: "api-key" }],
          defaultMode: 0o444,
        },
      },
    ]);
    expect(envOf(out).TOLLGATE_API_KEY_FILE).toBe("/var/run/tollgate/api-key");
    expect(envOf(out).TOLLGATE_SERVICE_TOKEN_FILE).toBeUndefined();
  });

  it("mounts each upstream's credential Secret by name into the sidecar only, never a value", () => {
    const upstreams = [
      {
        name: "payments",
        type: "http",
        url: "http://pay.tools.svc/pay",
        credentials: { secretName: "pay-cred", type: "bearer" },
      },
      { name: "search", type: "http", url: "http://search.tools.svc/" },
      {
        name: "crm",
        type: "mcp",
        transport: "streamable_http",
        url: "http://crm/mcp",
        credentials: {
          secretName: "crm-oauth",
          type: "oauth2_client_credentials",
          tokenUrl: "http://idp/token",
        },
      },
    ];
    const p: PodLike = {
      metadata: { name: "c1", annotations: { "tollgate.dev/upstreams": JSON.stringify(upstreams) } },
      spec: { containers: [{ name: "agent" }] },
    };
    const d = buildInjection(p, governed, { ...cfg, tokenAudience: "tg", tokenExpirationSeconds: 900 });
    if (d.kind !== "inject") throw new Error(d.kind);
    const out = applyPatch(p, d.patch) as any;
    expect(out.spec.volumes).toEqual([
      {
        name: "tollgate-identity",
        projected: {
          defaultMode: 0o444,
          sources: [{ serviceAccountToken: { audience: "tg", expirationSeconds: 900, path: "token" } }],
        },
      },
      { name: "tollgate-cred-0", secret: { secretName: "pay-cred", defaultMode: 0o444 } },
      { name: "tollgate-cred-2", secret: { secretName: "crm-oauth", defaultMode: 0o444 } },
    ]);
    expect(sidecarOf(out).volumeMounts).toEqual([
      { name: "tollgate-identity", mountPath: "/var/run/tollgate/identity", readOnly: true },
      { name: "tollgate-cred-0", mountPath: "/var/run/tollgate/credentials/payments", readOnly: true },
      { name: "tollgate-cred-2", mountPath: "/var/run/tollgate/credentials/crm", readOnly: true },
    ]);
    expect(envOf(out).TOLLGATE_CREDENTIALS_DIR).toBe("/var/run/tollgate/credentials");
    expect(out.spec.containers.find((c: any) => c.name === "agent").volumeMounts).toBeUndefined();
  });

  it("refuses a credentials entry without a valid Secret name or upstream name", () => {
    for (const [bad, field] of [
      [{ name: "p", credentials: {} }, "credentials.secretName"],
      [{ name: "p", credentials: { secretName: "Not_A_Name" } }, "credentials.secretName"],
      [{ name: "../etc", credentials: { secretName: "ok" } }, "upstreams[0].name"],
    ] as const) {
      const p: PodLike = {
        metadata: { name: "bad", annotations: { "tollgate.dev/upstreams": JSON.stringify([bad]) } },
        spec: { containers: [{ name: "agent" }] },
      };
      const d = buildInjection(p, governed, cfg);
      expect(d.kind).toBe("deny");
      if (d.kind === "deny") expect(d.message).toContain(field);
    }
  });

  it("creates the labels map of a pod without labels", () => {
    const p: PodLike = { metadata: { name: "bare" }, spec: { containers: [{ name: "agent" }] } };
    const d = buildInjection(p, governed, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    expect(d.patch).toContainEqual({
      op: "add",
      path: "/metadata/labels",
      value: { "tollgate.dev/sidecar": "injected" },
    });
    expect((applyPatch(p, d.patch) as any).metadata.labels).toEqual({ "tollgate.dev/sidecar": "injected" });
  });

  it("appends to existing annotations and volumes (escaping the annotation key)", () => {
    const p = pod(
      { annotations: { team: "x" } },
      { containers: [{ name: "agent" }], volumes: [{ name: "data" }] },
    );
    const d = buildInjection(p, governed, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    // Appends are `add` at the old length, which the API server accepts.
    expect(outsideFirstContainer(d.patch)).toEqual([
      "add /spec/volumes/1",
      "add /spec/containers/1",
      "add /metadata/annotations/tollgate.dev~1injected",
      "add /metadata/annotations/kubectl.kubernetes.io~1default-container",
      "add /metadata/labels",
    ]);
    const out = applyPatch(p, d.patch) as any;
    expect(out.metadata.annotations).toEqual({
      team: "x",
      "tollgate.dev/injected": "true",
      "kubectl.kubernetes.io/default-container": "agent",
    });
    expect(out.spec.volumes.map((v: { name: string }) => v.name)).toEqual(["data", "tollgate-identity"]);
  });

  it("prefers the pod's organization annotation and passes upstreams through as compact JSON", () => {
    const p = pod({
      annotations: {
        "tollgate.dev/inject": "true",
        "tollgate.dev/organization": "globex",
        "tollgate.dev/upstreams": '{ "files": { "url": "http://files:8080" } }',
      },
    });
    const d = buildInjection(p, plain, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    expect(d.organization).toBe("globex");
    const env = envOf(applyPatch(p, d.patch));
    expect(env.TOLLGATE_ORGANIZATION).toBe("globex");
    expect(env.TOLLGATE_UPSTREAMS).toBe('{"files":{"url":"http://files:8080"}}');
  });

  it("native mode puts the sidecar first among init containers with restartPolicy Always", () => {
    const p = pod({}, { containers: [{ name: "agent" }], initContainers: [{ name: "setup" }] });
    const d = buildInjection(p, governed, { ...cfg, mode: "native" });
    if (d.kind !== "inject") throw new Error(d.kind);
    const out = applyPatch(p, d.patch) as any;
    expect(out.spec.initContainers.map((c: { name: string }) => c.name)).toEqual([
      "tollgate-sidecar",
      "setup",
    ]);
    expect(out.spec.initContainers[0].restartPolicy).toBe("Always");
    expect(out.spec.containers).toEqual([{ name: "agent" }]);
  });

  it("keeps a default-container annotation the pod already has", () => {
    const p = pod({ annotations: { "kubectl.kubernetes.io/default-container": "main" } });
    const d = buildInjection(p, governed, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    const out = applyPatch(p, d.patch) as any;
    expect(out.metadata.annotations["kubectl.kubernetes.io/default-container"]).toBe("main");
  });

  // Defect found in a real kind cluster (issue 20): the pod was Ready 2/2 while the sidecar still
  // refused connections, and the sidecar listened on 127.0.0.1 only, where kubelet probes (sent
  // to the pod IP) cannot reach it.
  describe.each(["container", "native"] as const)("probes and start-up order (%s mode)", (mode) => {
    const injected = () => {
      const p = pod({}, { containers: [{ name: "agent" }] });
      const d = buildInjection(p, governed, { ...cfg, mode });
      if (d.kind !== "inject") throw new Error(d.kind);
      const out = applyPatch(p, d.patch) as any;
      const list = mode === "native" ? out.spec.initContainers : out.spec.containers;
      return { out, sidecar: list.find((c: { name: string }) => c.name === "tollgate-sidecar") };
    };

    it("has startup, readiness and liveness probes on a named port of the sidecar", () => {
      const { sidecar } = injected();
      const port = sidecar.ports.find((x: { name: string }) => x.name === "http-metrics");
      expect(port).toEqual({ name: "http-metrics", containerPort: 9091, protocol: "TCP" });
      expect(sidecar.startupProbe.httpGet).toEqual({
        path: "/readyz",
        port: "http-metrics",
        scheme: "HTTP",
      });
      expect(sidecar.readinessProbe.httpGet).toEqual({
        path: "/readyz",
        port: "http-metrics",
        scheme: "HTTP",
      });
      expect(sidecar.livenessProbe.httpGet).toEqual({
        path: "/healthz",
        port: "http-metrics",
        scheme: "HTTP",
      });
      // Fast start-up detection, generous start-up budget.
      expect(sidecar.startupProbe.periodSeconds).toBe(1);
      expect(
        sidecar.startupProbe.periodSeconds * sidecar.startupProbe.failureThreshold,
      ).toBeGreaterThanOrEqual(60);
    });

    it("serves the probe face on all interfaces (the kubelet probes the pod IP), the MCP face on loopback", () => {
      const env = envOf(injected().out);
      expect(env.TOLLGATE_PROBE_ADDRESS).toBe("0.0.0.0:9091");
      expect(env.TOLLGATE_HTTP_ADDRESS).toBe("127.0.0.1:9090");
      expect(env.TOLLGATE_GRPC_ADDRESS).toBe("127.0.0.1:50051");
    });

    it("starts the sidecar before the agent container", () => {
      const { out, sidecar } = injected();
      if (mode === "native") {
        // An init container with restartPolicy Always: app containers start after its startupProbe.
        expect(out.spec.initContainers[0].name).toBe("tollgate-sidecar");
        expect(sidecar.restartPolicy).toBe("Always");
        expect(sidecar.lifecycle).toBeUndefined();
        expect(out.spec.containers.map((c: { name: string }) => c.name)).toEqual(["agent"]);
      } else {
        // First container, and its postStart hook holds the next container until it answers.
        expect(out.spec.containers.map((c: { name: string }) => c.name)).toEqual([
          "tollgate-sidecar",
          "agent",
        ]);
        expect(sidecar.restartPolicy).toBeUndefined();
        const cmd = sidecar.lifecycle.postStart.exec.command;
        expect(cmd.slice(0, 2)).toEqual(["node", "-e"]);
        expect(cmd[2]).toContain("port:9091");
        expect(cmd[2]).toContain('path:"/readyz"');
      }
    });
  });

  it("the postStart script waits until the probe face answers /readyz with 200", async () => {
    const http = await import("node:http");
    const { spawn } = await import("node:child_process");
    const { waitForSidecarScript } = await import("../../../operator/webhook/sidecar.js");
    // Reserve a free port; nothing listens at first, then the face answers 503, then 200.
    let ready = false;
    const paths: string[] = [];
    const probe = http.createServer((req, res) => {
      paths.push(req.url ?? "");
      res.writeHead(ready ? 200 : 503).end("{}");
    });
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const child = spawn(process.execPath, ["-e", waitForSidecarScript(port)], { stdio: "ignore" });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await pause(500);
    expect(child.exitCode).toBeNull(); // nothing listens yet
    await new Promise<void>((r) => probe.listen(port, "127.0.0.1", r));
    await pause(500);
    expect(child.exitCode).toBeNull(); // listening but not ready
    expect(paths.length).toBeGreaterThan(0);
    ready = true;
    expect(await exited).toBe(0);
    expect(new Set(paths)).toEqual(new Set(["/readyz"]));
    await new Promise<void>((r) => probe.close(() => r()));
  });

  describe.each(["container", "native"] as const)("settings from the chart (%s mode)", (mode) => {
    const configured: InjectionConfig = {
      ...cfg,
      mode,
      imagePullPolicy: "Always",
      nodeOptions: "--max-old-space-size=96 --stack-trace-limit=20",
      resources: { requests: { cpu: "20m", memory: "80Mi" }, limits: { cpu: "1", memory: "192Mi" } },
      ports: { grpc: 6000, http: 6001, metrics: 6002 },
    };
    const inject = (p: PodLike, c: InjectionConfig = configured) => {
      const d = buildInjection(p, governed, c);
      if (d.kind !== "inject") throw new Error(d.kind);
      return sidecarOf(applyPatch(p, d.patch));
    };

    it("uses the configured pull policy, resources, V8 flags and ports everywhere they appear", () => {
      const sidecar = inject(pod());
      expect(sidecar.imagePullPolicy).toBe("Always");
      expect(sidecar.resources).toEqual(configured.resources);
      const env = Object.fromEntries(
        sidecar.env.map((e: { name: string; value: string }) => [e.name, e.value]),
      );
      expect(env.NODE_OPTIONS).toBe("--max-old-space-size=96 --stack-trace-limit=20");
      expect(env.TOLLGATE_GRPC_ADDRESS).toBe("127.0.0.1:6000");
      expect(env.TOLLGATE_HTTP_ADDRESS).toBe("127.0.0.1:6001");
      expect(env.TOLLGATE_PROBE_ADDRESS).toBe("0.0.0.0:6002");
      expect(sidecar.ports).toEqual([
        { name: "grpc", containerPort: 6000, protocol: "TCP" },
        { name: "http-metrics", containerPort: 6002, protocol: "TCP" },
      ]);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"])
        expect(sidecar[probe].httpGet.port).toBe("http-metrics");
      if (mode === "container") expect(sidecar.lifecycle.postStart.exec.command[2]).toContain("port:6002");
    });

    it("an empty nodeOptions sets no NODE_OPTIONS (the image's default applies)", () => {
      const sidecar = inject(pod(), { ...configured, nodeOptions: "" });
      expect(sidecar.env.map((e: { name: string }) => e.name)).not.toContain("NODE_OPTIONS");
    });

    it("never shares the resources object between pods", () => {
      const a = inject(pod());
      a.resources.limits.memory = "1Gi";
      expect(inject(pod()).resources.limits.memory).toBe("192Mi");
      const b = inject(pod(), cfg);
      b.resources.limits.memory = "1Gi";
      expect(DEFAULT_SIDECAR_RESOURCES.limits?.memory).toBe("256Mi");
    });

    // A Service's named targetPort resolves to the first container declaring the name, and in
    // container mode the sidecar comes first: it must not take a name the agent uses.
    it("leaves a port name the agent's containers use to them, probing by number instead", () => {
      const p = pod(
        {},
        {
          containers: [{ name: "agent", ports: [{ name: "grpc" }, { name: "http-metrics" }] }],
          initContainers: [{ name: "setup", ports: [{}] }],
        },
      );
      expect(takenPortNames(p)).toEqual(new Set(["grpc", "http-metrics"]));
      const sidecar = inject(p);
      expect(sidecar.ports).toEqual([
        { containerPort: 6000, protocol: "TCP" },
        { containerPort: 6002, protocol: "TCP" },
      ]);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"])
        expect(sidecar[probe].httpGet.port).toBe(6002);
    });

    it("keeps a name that only another name resembles", () => {
      const p = pod({}, { containers: [{ name: "agent", ports: [{ name: "http" }, { name: "metrics" }] }] });
      expect(inject(p).ports.map((x: { name?: string }) => x.name)).toEqual(["grpc", "http-metrics"]);
    });
  });

  it("defaults to the V8 flags the sidecar image sets", () => {
    const d = buildInjection(pod(), governed, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    expect(envOf(applyPatch(pod(), d.patch)).NODE_OPTIONS).toBe(SIDECAR_NODE_OPTIONS);
  });

  it("is idempotent: the patched pod is not injected again", () => {
    const p = pod();
    const d = buildInjection(p, governed, cfg);
    if (d.kind !== "inject") throw new Error(d.kind);
    const again = buildInjection(applyPatch(p, d.patch), governed, cfg);
    expect(again).toEqual({ kind: "skip", reason: expect.stringMatching(/already injected/) });
  });

  it.each([
    [
      "no organization anywhere",
      pod({ annotations: { "tollgate.dev/inject": "true" } }),
      plain,
      /tollgate\.dev\/organization/,
    ],
    [
      "an invalid organization",
      pod({ annotations: { "tollgate.dev/organization": "Not A Slug" } }),
      governed,
      /tollgate\.dev\/organization must be/,
    ],
    [
      "invalid upstreams JSON",
      pod({ annotations: { "tollgate.dev/upstreams": "{nope" } }),
      governed,
      /tollgate\.dev\/upstreams is not valid JSON/,
    ],
    [
      "upstreams that are not an object",
      pod({ annotations: { "tollgate.dev/upstreams": "42" } }),
      governed,
      /tollgate\.dev\/upstreams/,
    ],
    [
      "an agent name that is too long",
      pod({ annotations: { "tollgate.dev/agent-name": "x".repeat(201) } }),
      governed,
      /tollgate\.dev\/agent-name/,
    ],
    [
      "a colliding volume",
      pod({}, { containers: [{ name: "a" }], volumes: [{ name: "tollgate-identity" }] }),
      governed,
      /spec\.volumes/,
    ],
  ] as const)("denies %s, naming the field", (_what, p, ns, message) => {
    const d = buildInjection(p, ns, cfg);
    expect(d.kind).toBe("deny");
    if (d.kind === "deny") expect(d.message).toMatch(message);
  });
});
