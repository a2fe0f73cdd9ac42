import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { issueServingCertificate } from "../support/controlplane.js";
import {
  httpGet,
  metricValue,
  OPERATOR_NAMESPACE,
  startTestOperator,
  testOperatorConfig,
  tokenFile,
  useOperatorEnv,
  waitFor,
} from "./helpers.js";

interface StoredPod {
  metadata: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec: {
    containers: Array<{
      name: string;
      env?: Array<{ name: string; value?: string }>;
      image?: string;
      ports?: Array<{ name?: string; containerPort: number }>;
      readinessProbe?: { httpGet?: { port: string | number } };
    }>;
    volumes?: Array<{ name: string; secret?: { secretName: string } }>;
  };
}

const pod = (
  name: string,
  namespace: string,
  meta: { annotations?: Record<string, string>; labels?: Record<string, string> } = {},
) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace, ...meta },
  spec: { containers: [{ name: "agent", image: "registry.example/agent:1" }] },
});
const sidecars = (p: StoredPod) => p.spec.containers.filter((c) => c.name === "tollgate-sidecar");
const envOf = (p: StoredPod) => Object.fromEntries((sidecars(p)[0]?.env ?? []).map((e) => [e.name, e.value]));

describe("the sidecar-injecting webhook behind a real API server", () => {
  const fx = useOperatorEnv({ identity: "webhook-test", reconciling: false });
  const admissions = async (outcome: string) => {
    const m = await httpGet(`http://127.0.0.1:${fx.op!.healthPort}/metrics`);
    return metricValue(m.body, "tollgate_operator_webhook_admissions_total", `{outcome="${outcome}"}`) ?? 0;
  };

  beforeAll(async () => {
    await fx.env.apply(
      sidecarInjectorConfiguration({
        target: { url: `https://127.0.0.1:${fx.op!.webhookPort}/mutate` },
        operatorNamespace: OPERATOR_NAMESPACE,
        timeoutSeconds: 10,
      }),
      {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: {
          name: "governed",
          labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": "acme" },
        },
      },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "plain" } },
    );
  });

  it("publishes its CA, kept in a Secret, as the caBundle of every webhook", async () => {
    const bundle = Buffer.from(fx.op!.caCert!).toString("base64");
    const config = await waitFor("caBundle published", async () => {
      const c = await fx.env.get("mutatingwebhookconfiguration", "tollgate-sidecar-injector");
      return c.webhooks.every(
        (w: { clientConfig: { caBundle?: string } }) => w.clientConfig.caBundle === bundle,
      )
        ? c
        : undefined;
    });
    expect(config.webhooks.map((w: { name: string }) => w.name)).toEqual([
      "namespaces.sidecar.tollgate.dev",
      "pods.sidecar.tollgate.dev",
    ]);
    expect(config.webhooks[0]).toMatchObject({
      sideEffects: "None",
      failurePolicy: "Fail",
      timeoutSeconds: 10,
    });
    const secret = await fx.env.get("secret", "tollgate-webhook-tls", OPERATOR_NAMESPACE);
    expect(secret.type).toBe("kubernetes.io/tls");
    expect(Buffer.from(secret.data["ca.crt"], "base64").toString()).toBe(fx.op!.caCert);
  });

  it("stores a Pod created in an injected namespace with the sidecar, its env and the API-key volume", async () => {
    await fx.env.apply(pod("billing-1", "governed", { labels: { app: "billing-agent" } }));
    const stored = (await fx.env.get("pod", "billing-1", "governed")) as StoredPod;
    expect(stored.metadata.annotations?.["tollgate.dev/injected"]).toBe("true");
    expect(stored.spec.containers.map((c) => c.name)).toEqual(["tollgate-sidecar", "agent"]);
    expect(sidecars(stored)[0]!.image).toBe("ghcr.io/tollgate/sidecar:test");
    // The label a PodMonitor selects, and the named ports it and the probes use.
    expect(stored.metadata.labels).toEqual({ app: "billing-agent", "tollgate.dev/sidecar": "injected" });
    expect(sidecars(stored)[0]!.ports).toEqual([
      { name: "grpc", containerPort: 50051, protocol: "TCP" },
      { name: "http-metrics", containerPort: 9091, protocol: "TCP" },
    ]);
    expect(envOf(stored)).toEqual({
      TOLLGATE_SERVICE_URL: "http://tollgate.tollgate-system.svc:8000",
      TOLLGATE_API_KEY_FILE: "/var/run/tollgate/api-key",
      TOLLGATE_ORGANIZATION: "acme",
      TOLLGATE_AGENT_NAME: "billing-agent",
      TOLLGATE_GRPC_ADDRESS: "127.0.0.1:50051",
      TOLLGATE_HTTP_ADDRESS: "127.0.0.1:9090",
      TOLLGATE_PROBE_ADDRESS: "0.0.0.0:9091",
      NODE_OPTIONS: "--max-semi-space-size=1 --max-old-space-size=128",
    });
    expect(stored.spec.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "tollgate-api-key",
          secret: expect.objectContaining({ secretName: "tollgate-api-key" }),
        }),
      ]),
    );
  });

  it("leaves the agent's own port names to it (a Service's named targetPort keeps resolving to the agent)", async () => {
    const p = pod("named-ports", "governed", { labels: { app: "named" } });
    p.spec.containers = [
      {
        name: "agent",
        image: "registry.example/agent:1",
        ports: [
          { name: "grpc", containerPort: 7000 },
          { name: "http-metrics", containerPort: 7001 },
        ],
      } as (typeof p.spec.containers)[number],
    ];
    await fx.env.apply(p);
    const stored = (await fx.env.get("pod", "named-ports", "governed")) as StoredPod;
    const sidecar = sidecars(stored)[0]!;
    expect(sidecar.ports).toEqual([
      { containerPort: 50051, protocol: "TCP" },
      { containerPort: 9091, protocol: "TCP" },
    ]);
    expect(sidecar.readinessProbe?.httpGet?.port).toBe(9091);
    expect(stored.spec.containers[1]!.ports?.map((x) => x.name)).toEqual(["grpc", "http-metrics"]);
  });

  it("does not inject twice: a Pod created again from its stored (injected) manifest keeps one sidecar", async () => {
    const stored = (await fx.env.get("pod", "billing-1", "governed")) as StoredPod & { status?: unknown };
    await fx.env.k(["delete", "pod", "billing-1", "-n", "governed", "--wait=true"]);
    const {
      uid: _u,
      resourceVersion: _r,
      creationTimestamp: _c,
      managedFields: _m,
      ...metadata
    } = stored.metadata as Record<string, unknown>;
    await fx.env.k(["create", "-f", "-"], JSON.stringify({ ...stored, metadata, status: undefined }));
    const again = (await fx.env.get("pod", "billing-1", "governed")) as StoredPod;
    expect(sidecars(again)).toHaveLength(1);
    expect(again.spec.volumes?.filter((v) => v.name === "tollgate-api-key")).toHaveLength(1);
    expect(again.spec.containers.map((c) => c.name)).toEqual(["tollgate-sidecar", "agent"]);
  });

  it("honours the opt-out annotation", async () => {
    await fx.env.apply(pod("opted-out", "governed", { annotations: { "tollgate.dev/inject": "false" } }));
    const stored = (await fx.env.get("pod", "opted-out", "governed")) as StoredPod;
    expect(stored.spec.containers.map((c) => c.name)).toEqual(["agent"]);
    expect(stored.metadata.annotations?.["tollgate.dev/injected"]).toBeUndefined();
  });

  it("injects an annotated Pod outside governed namespaces, and leaves other Pods alone", async () => {
    await fx.env.apply(
      pod("research-1", "plain", {
        annotations: {
          "tollgate.dev/inject": "true",
          "tollgate.dev/organization": "globex",
          "tollgate.dev/agent-name": "researcher",
          "tollgate.dev/upstreams": '{"search":{"url":"http://search:8080"}}',
        },
      }),
    );
    const injected = (await fx.env.get("pod", "research-1", "plain")) as StoredPod;
    expect(envOf(injected)).toMatchObject({
      TOLLGATE_ORGANIZATION: "globex",
      TOLLGATE_AGENT_NAME: "researcher",
      TOLLGATE_UPSTREAMS: '{"search":{"url":"http://search:8080"}}',
    });

    // matchConditions keep un-annotated pods of other namespaces away from the webhook entirely.
    const reviewedBefore = (await admissions("skipped")) + (await admissions("injected"));
    await fx.env.apply(pod("ordinary", "plain"));
    const ordinary = (await fx.env.get("pod", "ordinary", "plain")) as StoredPod;
    expect(ordinary.spec.containers.map((c) => c.name)).toEqual(["agent"]);
    expect((await admissions("skipped")) + (await admissions("injected"))).toBe(reviewedBefore);
  });

  it("never injects into kube-system, even when asked", async () => {
    await fx.env.apply(
      pod("system-agent", "kube-system", {
        annotations: { "tollgate.dev/inject": "true", "tollgate.dev/organization": "acme" },
      }),
    );
    const stored = (await fx.env.get("pod", "system-agent", "kube-system")) as StoredPod;
    expect(stored.spec.containers.map((c) => c.name)).toEqual(["agent"]);
  });

  it("denies a Pod that asks for injection without an organization, naming the label", async () => {
    const r = await fx.env.kTry(
      ["apply", "-f", "-"],
      JSON.stringify(pod("orphan", "plain", { annotations: { "tollgate.dev/inject": "true" } })),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('admission webhook "pods.sidecar.tollgate.dev" denied the request');
    expect(r.stderr).toContain("tollgate.dev/organization");
    expect(await fx.env.get("pod", "orphan", "plain")).toBeUndefined();
    const bad = await fx.env.kTry(
      ["apply", "-f", "-"],
      JSON.stringify(
        pod("bad-upstreams", "governed", { annotations: { "tollgate.dev/upstreams": "{not json" } }),
      ),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("tollgate.dev/upstreams is not valid JSON");
  });

  it("counts admissions by outcome and measures their latency", async () => {
    const m = (await httpGet(`http://127.0.0.1:${fx.op!.healthPort}/metrics`)).body;
    expect(
      metricValue(m, "tollgate_operator_webhook_admissions_total", '{outcome="injected"}'),
    ).toBeGreaterThanOrEqual(2);
    expect(
      metricValue(m, "tollgate_operator_webhook_admissions_total", '{outcome="denied"}'),
    ).toBeGreaterThanOrEqual(2);
    expect(
      metricValue(m, "tollgate_operator_webhook_admission_duration_seconds_count"),
    ).toBeGreaterThanOrEqual(5);
    expect((await httpGet(`http://127.0.0.1:${fx.op!.healthPort}/readyz`)).status).toBe(200);
  });
  it("with cert-manager, serves the mounted certificate and leaves the caBundle to the CA injector", async () => {
    // cert-manager's part, done by hand: a serving certificate in a directory, the CA in the bundle.
    const issued = await issueServingCertificate(fx.env.cp, "cm-webhook");
    const certDir = path.join(fx.env.cp.dir, "cm-certs");
    await mkdir(certDir);
    await writeFile(path.join(certDir, "tls.crt"), await readFile(issued.cert));
    await writeFile(path.join(certDir, "tls.key"), await readFile(issued.key));
    const cmOperator = await startTestOperator(
      testOperatorConfig(
        fx.env,
        {
          serviceUrl: fx.svc.url,
          adminTokenFile: await tokenFile(fx.env, fx.svc),
          identity: "cert-manager-mode",
        },
        {
          webhook: {
            ...testOperatorConfig(fx.env, { serviceUrl: "", adminTokenFile: "", identity: "" }).webhook,
            certMode: "cert-manager",
            certDir,
            configurationName: "tollgate-cm-injector",
          },
        },
      ),
    );
    try {
      const caPem = await readFile(fx.env.cp.caCertPath, "utf8");
      await fx.env.k(["delete", "mutatingwebhookconfiguration", "tollgate-sidecar-injector"]);
      await fx.env.apply(
        sidecarInjectorConfiguration({
          name: "tollgate-cm-injector",
          target: { url: `https://127.0.0.1:${cmOperator.webhookPort}/mutate` },
          operatorNamespace: OPERATOR_NAMESPACE,
          caPem,
          certManagerCertificate: `${OPERATOR_NAMESPACE}/tollgate-webhook`,
        }),
      );
      await fx.env.apply(pod("cm-agent", "governed", { labels: { app: "cm-agent" } }));
      const stored = (await fx.env.get("pod", "cm-agent", "governed")) as StoredPod;
      expect(sidecars(stored)).toHaveLength(1);
      const m = (await httpGet(`http://127.0.0.1:${cmOperator.healthPort}/metrics`)).body;
      expect(metricValue(m, "tollgate_operator_webhook_admissions_total", '{outcome="injected"}')).toBe(1);
      const config = await fx.env.get("mutatingwebhookconfiguration", "tollgate-cm-injector");
      for (const w of config.webhooks)
        expect(Buffer.from(w.clientConfig.caBundle, "base64").toString()).toBe(caPem);
    } finally {
      await cmOperator.stop();
    }
  });
});
