/**
 * The Helm chart (charts/tollgate) against the real control plane (issue 8): `helm lint --strict`,
 * `helm template` with default values and with a production-like variant, invariants of the
 * render (security context, PDB, probes, webhook, RBAC equal to operator/rbac.ts, CRDs equal to
 * crds/), schema and render-time rejections, `kubectl apply --dry-run=server` of both renders,
 * and a real `helm install` / `upgrade` / `uninstall` showing that the generated secrets are
 * never rotated and that Secret and CRDs are kept. Helm conventions (issue 22): ServiceAccounts,
 * podLabels, scheduling, the Ingress, the operator's image, the injected sidecar's settings (chart
 * value → operator environment → operator/config.ts → the patch builder) and its PodMonitor.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { loadOperatorConfig } from "../../operator/config.js";
import { operatorRbac } from "../../operator/rbac.js";
import {
  policyValidatorConfiguration,
  sidecarInjectorConfiguration,
} from "../../operator/webhook/configuration.js";
import { applyPatch, buildInjection } from "../../operator/webhook/patch.js";
import {
  DEFAULT_SIDECAR_PORTS,
  DEFAULT_SIDECAR_RESOURCES,
  Labels,
  PortName,
  SIDECAR_CONTAINER,
  SIDECAR_LABEL_VALUE,
  SIDECAR_NODE_OPTIONS,
} from "../../operator/webhook/sidecar.js";
import { RevokeKeysSchema, RotateKeysSchema } from "../../src/service/receipts/key-config.js";
import { type ControlPlane, startControlPlane } from "../support/controlplane.js";
import { kubectl } from "../support/kubectl.js";
import { promtool } from "../support/promtool.js";

const root = path.resolve(import.meta.dirname, "../..");
const chart = path.join(root, "charts/tollgate");
const NS = "tollgate-system";
const RELEASE = "tg";
const FULL = "tg-tollgate";

type Obj = Record<string, any>;

let cp: ControlPlane;

function helm(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(cp.binDir, "helm"), [...args, "--kubeconfig", cp.kubeconfigPath], {
      env: {
        ...process.env,
        HELM_CACHE_HOME: path.join(cp.dir, "helm/cache"),
        HELM_CONFIG_HOME: path.join(cp.dir, "helm/config"),
        HELM_DATA_HOME: path.join(cp.dir, "helm/data"),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

async function k(args: string[], input?: string): Promise<string> {
  const r = await kubectl(cp, args, { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

async function render(set: string[] = []): Promise<{ text: string; objs: Obj[] }> {
  const r = await helm(["template", RELEASE, chart, "-n", NS, ...set.flatMap((s) => ["--set", s])]);
  expect(r.code, r.stderr).toBe(0);
  const objs = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Obj)
    .filter(Boolean);
  return { text: r.stdout, objs };
}

const find = (objs: Obj[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`${kind} ${name} not in the render`);
  return o;
};
const env = (container: Obj, name: string) => container.env.find((e: Obj) => e.name === name);

/** The operator's environment as the container gets it (plain values; valueFrom left out). */
const envRecord = (container: Obj): Record<string, string> =>
  Object.fromEntries(container.env.filter((e: Obj) => "value" in e).map((e: Obj) => [e.name, e.value]));

/** The sidecar a pod gets from an operator started with the rendered environment. */
const injectedSidecar = (operatorContainer: Obj, spec: Obj = { containers: [{ name: "agent" }] }) => {
  const config = loadOperatorConfig(envRecord(operatorContainer));
  const pod = { metadata: { name: "agent", labels: { app: "agent" } }, spec };
  const ns = {
    name: "agents",
    labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": "acme" },
  };
  const d = buildInjection(pod, ns, config.sidecar);
  if (d.kind !== "inject") throw new Error(`not injected: ${d.kind}`);
  const out = applyPatch(pod, d.patch) as Obj;
  const sidecar = [...(out.spec.initContainers ?? []), ...out.spec.containers].find(
    (c: Obj) => c.name === SIDECAR_CONTAINER,
  );
  return { config, pod: out, sidecar };
};

/** Ingress, ServiceAccounts, scheduling, the operator image, the sidecar's settings, the PodMonitor. */
const CONVENTIONS = [
  "database.existingSecret=tollgate-postgres",
  "ingress.enabled=true",
  "ingress.className=nginx",
  "ingress.annotations.cert-manager\\.io/cluster-issuer=letsencrypt",
  "ingress.hosts[0].host=tollgate.example.com",
  "ingress.hosts[0].paths[0].path=/",
  "ingress.hosts[0].paths[0].pathType=Prefix",
  "ingress.hosts[1].host=approvals.example.com",
  "ingress.tls[0].secretName=tollgate-tls",
  "ingress.tls[0].hosts[0]=tollgate.example.com",
  "service.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::111122223333:role/tollgate",
  "service.podLabels.team=platform",
  "service.podLabels.app\\.kubernetes\\.io/component=hijacked",
  "service.priorityClassName=platform-high",
  "service.topologySpreadConstraints[0].maxSkew=1",
  "service.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
  "service.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
  "service.tolerations[0].key=dedicated",
  "service.tolerations[0].operator=Exists",
  "operator.serviceAccount.create=false",
  "operator.serviceAccount.name=tollgate-operator-wi",
  "operator.podLabels.team=platform",
  "operator.priorityClassName=system-cluster-critical",
  "operator.topologySpreadConstraints[0].maxSkew=1",
  "operator.topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname",
  "operator.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
  "operator.topologySpreadConstraints[0].labelSelector.matchLabels.custom=yes",
  "operator.image.repository=registry.example.com/tollgate",
  "operator.image.tag=9.9.9",
  "operator.image.pullPolicy=Always",
  "sidecar.image.pullPolicy=Always",
  "sidecar.resources.requests.cpu=20m",
  "sidecar.resources.requests.memory=80Mi",
  "sidecar.resources.limits.memory=192Mi",
  "sidecar.resources.limits.cpu=1",
  "sidecar.nodeOptions=--max-semi-space-size=1 --max-old-space-size=96",
  "sidecar.ports.grpc=6000",
  "sidecar.ports.http=6001",
  "sidecar.ports.metrics=6002",
  "sidecar.podMonitor.enabled=true",
  "sidecar.podMonitor.interval=15s",
  "sidecar.podMonitor.namespaces={acme-agents,globex-agents}",
  "sidecar.podMonitor.labels.release=prometheus",
];

const VARIANT = [
  "service.replicas=3",
  "database.existingSecret=tollgate-postgres",
  "service.image.tag=1.2.3",
  "webhook.certManager.enabled=true",
  "webhook.excludeNamespaces={monitoring}",
  "webhook.timeoutSeconds=10",
  "metrics.serviceMonitor.enabled=true",
  "dashboard.enabled=true",
  "crds.enabled=false",
  "operator.replicas=3",
];

beforeAll(async () => {
  cp = await startControlPlane();
  await k(["create", "namespace", NS]);
});
afterAll(async () => cp?.stop());

describe("charts/tollgate", () => {
  it("helm lint --strict passes with default values and with the variant", async () => {
    const plain = await helm(["lint", "--strict", chart]);
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    const variant = await helm(["lint", "--strict", chart, ...VARIANT.flatMap((s) => ["--set", s])]);
    expect(variant.code, variant.stdout + variant.stderr).toBe(0);
  });

  it("default render: hardened pods, probes, PDBs, secrets kept, images at appVersion", async () => {
    const { objs } = await render();
    const appVersion = parseYaml(readFileSync(path.join(chart, "Chart.yaml"), "utf8")).appVersion;
    const deployments = objs.filter((o) => o.kind === "Deployment");
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([FULL, `${FULL}-operator`]);
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(pod.volumes).toContainEqual({ name: "tmp", emptyDir: {} });
      for (const c of pod.containers) {
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(c.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
        expect(c.livenessProbe.httpGet.path).toBe("/healthz");
        expect(c.readinessProbe.httpGet.path).toBe("/readyz");
        expect(c.resources.requests.memory).toBeTruthy();
        expect(c.image).toBe(`ghcr.io/tollgate/tollgate:${appVersion}`);
      }
    }
    const svc = find(objs, "Deployment", FULL);
    expect(svc.spec.replicas).toBe(1);
    const c = svc.spec.template.spec.containers[0];
    expect(env(c, "HOST").value).toBe("0.0.0.0");
    expect(env(c, "DATABASE_URL")).toBeUndefined(); // embedded PGlite without existingSecret
    // Embedded PGlite peaks at ~850 MiB RSS at start (measured in kind, test/cluster): 512Mi was
    // OOMKilled. Resources follow the database mode unless service.resources is set.
    expect(c.resources).toEqual({ requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } });
    expect(env(c, "TOLLGATE_MASTER_KEY_FILE").value).toBe("/var/run/tollgate/secrets/master-key");
    // Identity is on by default: the service's own token asks the API server for TokenReviews.
    expect(svc.spec.template.spec.automountServiceAccountToken).toBe(true);
    const reviewer = objs.find(
      (o: Obj) => o.kind === "ClusterRole" && o.metadata.name.endsWith("-service-identity"),
    );
    expect(reviewer?.rules).toEqual([
      { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
    ]);
    expect(env(c, "TOLLGATE_WORKLOAD_IDENTITY").value).toBe("on");
    // The service's V8 flags bound its young generation (values.yaml service.nodeOptions).
    expect(env(c, "NODE_OPTIONS").value).toMatch(/^--max-semi-space-size=\d+$/);

    const pdb = find(objs, "PodDisruptionBudget", FULL);
    expect(pdb.spec.selector.matchLabels).toEqual(svc.spec.selector.matchLabels);
    expect(pdb.spec.maxUnavailable).toBe(1);
    const opPdb = find(objs, "PodDisruptionBudget", `${FULL}-operator`);
    expect(opPdb.spec.minAvailable).toBe(1);

    const service = find(objs, "Service", FULL);
    expect(service.spec.selector).toEqual(svc.spec.selector.matchLabels);

    const secret = find(objs, "Secret", `${FULL}-secrets`);
    expect(secret.metadata.annotations["helm.sh/resource-policy"]).toBe("keep");
    const masterKey = Buffer.from(secret.data["master-key"], "base64").toString("utf8");
    expect(Buffer.from(masterKey, "base64")).toHaveLength(32);
    expect(Buffer.from(secret.data["admin-token"], "base64").toString("utf8")).toMatch(
      /^tga_[A-Za-z0-9]{43}$/,
    );

    const op = find(objs, "Deployment", `${FULL}-operator`);
    const oc = op.spec.template.spec.containers[0];
    expect(op.spec.replicas).toBe(2);
    expect(env(oc, "TOLLGATE_SIDECAR_IMAGE").value).toBe(`ghcr.io/tollgate/sidecar:${appVersion}`);
    expect(env(oc, "TOLLGATE_SERVICE_URL").value).toBe(`http://${FULL}.${NS}.svc:8000`);
    expect(env(oc, "TOLLGATE_WEBHOOK_CERT_MODE").value).toBe("self-signed");
    expect(env(oc, "TOLLGATE_LEASE_NAME").value).toBe(`${FULL}-operator`);
    expect(oc.imagePullPolicy).toBe("IfNotPresent");
    expect(op.spec.template.spec.serviceAccountName).toBe(`${FULL}-operator`);
    expect(svc.spec.template.spec.serviceAccountName).toBe(FULL);
    find(objs, "ServiceAccount", FULL);
    find(objs, "ServiceAccount", `${FULL}-operator`);
    for (const kind of ["ServiceMonitor", "Certificate", "Ingress", "PodMonitor"])
      expect(objs.some((o) => o.kind === kind)).toBe(false);
    for (const d of deployments) {
      expect(d.spec.template.spec.priorityClassName).toBeUndefined();
      expect(d.spec.template.spec.topologySpreadConstraints).toBeUndefined();
      expect(d.spec.template.metadata.labels).toEqual(d.spec.selector.matchLabels);
    }
    expect(env(c, "TOLLGATE_PUBLIC_URL")).toBeUndefined();
    // The chart's sidecar defaults are the operator's and the image's defaults.
    const { config, sidecar } = injectedSidecar(oc);
    expect(config.sidecar).toMatchObject({
      mode: "native",
      imagePullPolicy: "IfNotPresent",
      resources: DEFAULT_SIDECAR_RESOURCES,
      nodeOptions: SIDECAR_NODE_OPTIONS,
      ports: DEFAULT_SIDECAR_PORTS,
    });
    expect(sidecar.ports.map((p: Obj) => p.name)).toEqual([PortName.grpc, PortName.metrics]);
  });

  it("conventions render: Ingress, ServiceAccounts, podLabels, scheduling, operator image", async () => {
    const { objs } = await render(CONVENTIONS);
    const ing = find(objs, "Ingress", FULL);
    expect(ing.spec.ingressClassName).toBe("nginx");
    expect(ing.metadata.annotations).toEqual({ "cert-manager.io/cluster-issuer": "letsencrypt" });
    expect(ing.spec.tls).toEqual([{ secretName: "tollgate-tls", hosts: ["tollgate.example.com"] }]);
    expect(ing.spec.rules.map((r: Obj) => r.host)).toEqual(["tollgate.example.com", "approvals.example.com"]);
    const service = find(objs, "Service", FULL);
    for (const rule of ing.spec.rules) {
      // Paths default to / Prefix; the backend is the service's named http port.
      expect(rule.http.paths).toEqual([
        { path: "/", pathType: "Prefix", backend: { service: { name: FULL, port: { name: "http" } } } },
      ]);
    }
    expect(service.spec.ports.map((p: Obj) => p.name)).toContain("http");

    const svc = find(objs, "Deployment", FULL);
    const pod = svc.spec.template;
    // The first host, with TLS, is the base URL of approval and verification links.
    expect(env(pod.spec.containers[0], "TOLLGATE_PUBLIC_URL").value).toBe("https://tollgate.example.com");
    // podLabels are added; the selector labels win, so the Deployment still selects its pods.
    expect(pod.metadata.labels).toEqual({ ...svc.spec.selector.matchLabels, team: "platform" });
    expect(pod.metadata.labels["app.kubernetes.io/component"]).toBe("service");
    expect(pod.spec.priorityClassName).toBe("platform-high");
    expect(pod.spec.tolerations).toEqual([{ key: "dedicated", operator: "Exists" }]);
    expect(pod.spec.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: "topology.kubernetes.io/zone",
        whenUnsatisfiable: "ScheduleAnyway",
        labelSelector: { matchLabels: svc.spec.selector.matchLabels },
      },
    ]);
    const sa = find(objs, "ServiceAccount", FULL);
    expect(sa.metadata.annotations).toEqual({
      "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/tollgate",
    });
    expect(sa.automountServiceAccountToken).toBe(false);

    // The operator runs as an existing ServiceAccount, which the chart's RBAC binds.
    const op = find(objs, "Deployment", `${FULL}-operator`);
    const opPod = op.spec.template.spec;
    expect(opPod.serviceAccountName).toBe("tollgate-operator-wi");
    expect(objs.filter((o) => o.kind === "ServiceAccount").map((o) => o.metadata.name)).toEqual([FULL]);
    for (const kind of ["ClusterRoleBinding", "RoleBinding"])
      expect(find(objs, kind, `${FULL}-operator`).subjects).toEqual([
        { kind: "ServiceAccount", name: "tollgate-operator-wi", namespace: NS },
      ]);
    expect(op.spec.template.metadata.labels.team).toBe("platform");
    expect(opPod.priorityClassName).toBe("system-cluster-critical");
    // A labelSelector of the user's own stays as given.
    expect(opPod.topologySpreadConstraints[0].labelSelector).toEqual({ matchLabels: { custom: "yes" } });
    const oc = opPod.containers[0];
    expect(oc.image).toBe("registry.example.com/tollgate:9.9.9");
    expect(oc.imagePullPolicy).toBe("Always");
    expect(pod.spec.containers[0].image).toMatch(/^ghcr\.io\/tollgate\/tollgate:/); // the service keeps its own
  });

  it("conventions render: the sidecar's values reach the injected container through the operator", async () => {
    const { objs } = await render(CONVENTIONS);
    const oc = find(objs, "Deployment", `${FULL}-operator`).spec.template.spec.containers[0];
    const { pod, sidecar } = injectedSidecar(oc);
    expect(sidecar.imagePullPolicy).toBe("Always");
    expect(sidecar.resources).toEqual({
      requests: { cpu: "20m", memory: "80Mi" },
      limits: { cpu: "1", memory: "192Mi" },
    });
    const sidecarEnv = envRecord(sidecar);
    expect(sidecarEnv.NODE_OPTIONS).toBe("--max-semi-space-size=1 --max-old-space-size=96");
    expect(sidecarEnv.TOLLGATE_GRPC_ADDRESS).toBe("127.0.0.1:6000");
    expect(sidecarEnv.TOLLGATE_HTTP_ADDRESS).toBe("127.0.0.1:6001");
    expect(sidecarEnv.TOLLGATE_PROBE_ADDRESS).toBe("0.0.0.0:6002");
    expect(sidecar.ports).toEqual([
      { name: "grpc", containerPort: 6000, protocol: "TCP" },
      { name: "http-metrics", containerPort: 6002, protocol: "TCP" },
    ]);
    expect(sidecar.readinessProbe.httpGet.port).toBe("http-metrics");

    // The PodMonitor selects what the webhook sets: the label and the port name.
    const pm = find(objs, "PodMonitor", `${FULL}-sidecar`);
    expect(pm.metadata.labels.release).toBe("prometheus");
    expect(pm.spec.selector.matchLabels).toEqual({ [Labels.sidecar]: SIDECAR_LABEL_VALUE });
    expect(pod.metadata.labels[Labels.sidecar]).toBe(SIDECAR_LABEL_VALUE);
    expect(pm.spec.namespaceSelector).toEqual({ matchNames: ["acme-agents", "globex-agents"] });
    const [endpoint] = pm.spec.podMetricsEndpoints;
    expect(endpoint).toMatchObject({ port: PortName.metrics, path: "/metrics", interval: "15s" });
    expect(sidecar.ports.map((p: Obj) => p.name)).toContain(endpoint.port);
    expect(endpoint.relabelings).toEqual([
      { sourceLabels: ["__meta_kubernetes_pod_container_name"], regex: SIDECAR_CONTAINER, action: "keep" },
    ]);

    const anyNs = await render(["sidecar.podMonitor.enabled=true"]);
    expect(find(anyNs.objs, "PodMonitor", `${FULL}-sidecar`).spec.namespaceSelector).toEqual({ any: true });
  });

  it("tracing values: OTEL_* on the service and the operator, and through the operator on every injected sidecar", async () => {
    const { objs } = await render([
      "tracing.endpoint=http://otel-collector.observability:4318",
      "tracing.sampler=parentbased_traceidratio",
      "tracing.samplerArg=0.25",
    ]);
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel-collector.observability:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
    };
    const service = envRecord(find(objs, "Deployment", FULL).spec.template.spec.containers[0]);
    expect(service).toMatchObject({ ...otel, OTEL_SERVICE_NAME: "tollgate-service" });
    const oc = find(objs, "Deployment", `${FULL}-operator`).spec.template.spec.containers[0];
    expect(envRecord(oc)).toMatchObject({ ...otel, OTEL_SERVICE_NAME: "tollgate-operator" });
    expect(envRecord(injectedSidecar(oc).sidecar)).toMatchObject({
      ...otel,
      OTEL_SERVICE_NAME: "tollgate-sidecar",
    });
    // Off by default: no OTEL_* anywhere, the sidecar included.
    const off = await render([]);
    const offOperator = find(off.objs, "Deployment", `${FULL}-operator`).spec.template.spec.containers[0];
    for (const env of [
      envRecord(find(off.objs, "Deployment", FULL).spec.template.spec.containers[0]),
      envRecord(offOperator),
      envRecord(injectedSidecar(offOperator).sidecar),
    ]) {
      expect(Object.keys(env).filter((k) => k.startsWith("OTEL_"))).toEqual([]);
    }
  });

  it("key values: rotation tokens and revocations reach the service as the environment its config parses", async () => {
    const { objs } = await render([
      "service.keys.rotate.receipt=2026-11-27",
      "service.keys.rotate.receiptHmac=r2",
      "service.keys.revoke[0].kind=receipt_hmac",
      "service.keys.revoke[0].kid=master",
      "service.keys.revoke[0].organization=acme",
      "service.keys.revoke[0].revokedAt=2026-11-01T00:00:00Z",
      "service.keys.revoke[0].reason=leaked",
      "service.keys.revoke[1].kind=approval",
      "service.keys.revoke[1].kid=0123456789abcdef",
      "service.keys.revoke[1].revokedAt=2026-11-02T00:00:00+01:00",
    ]);
    const service = envRecord(find(objs, "Deployment", FULL).spec.template.spec.containers[0]);
    expect(RotateKeysSchema.parse(JSON.parse(service.TOLLGATE_ROTATE_KEYS!))).toEqual({
      receipt: "2026-11-27",
      receipt_hmac: "r2",
    });
    expect(RevokeKeysSchema.parse(JSON.parse(service.TOLLGATE_REVOKE_KEYS!))).toEqual([
      {
        kind: "receipt_hmac",
        kid: "master",
        organization: "acme",
        revoked_at: "2026-11-01T00:00:00Z",
        reason: "leaked",
      },
      { kind: "approval", kid: "0123456789abcdef", revoked_at: "2026-11-02T00:00:00+01:00" },
    ]);
    // Unset by default: the service rotates and revokes nothing.
    const off = envRecord(find((await render([])).objs, "Deployment", FULL).spec.template.spec.containers[0]);
    expect(off).not.toHaveProperty("TOLLGATE_ROTATE_KEYS");
    expect(off).not.toHaveProperty("TOLLGATE_REVOKE_KEYS");
    // The schema refuses what the service would refuse.
    const bad = await helm([
      "template",
      RELEASE,
      chart,
      "-n",
      NS,
      "--set",
      "service.keys.revoke[0].kind=nope",
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("/service/keys/revoke/0");
  });

  it("default render: webhook equals the operator's builder; RBAC equals operator/rbac.ts", async () => {
    const { objs } = await render();
    const mwc = find(objs, "MutatingWebhookConfiguration", `${FULL}-sidecar-injector`);
    const expected = sidecarInjectorConfiguration({
      name: `${FULL}-sidecar-injector`,
      target: { service: { name: `${FULL}-operator`, namespace: NS, port: 443 } },
      operatorNamespace: NS,
    }) as Obj;
    expect(mwc.webhooks).toEqual(expected.webhooks);
    const vwc = find(objs, "ValidatingWebhookConfiguration", `${FULL}-policy-validator`);
    const expectedValidator = policyValidatorConfiguration({
      name: `${FULL}-policy-validator`,
      target: { service: { name: `${FULL}-operator`, namespace: NS, port: 443 } },
      operatorNamespace: NS,
    }) as Obj;
    expect(vwc.webhooks).toEqual(expectedValidator.webhooks);
    for (const w of [...mwc.webhooks, ...vwc.webhooks]) {
      expect(w.sideEffects).toBe("None");
      expect(w.failurePolicy).toBe("Fail");
      expect(w.clientConfig.caBundle).toBeUndefined(); // injected by the operator
    }
    const opService = find(objs, "Service", `${FULL}-operator`);
    expect(opService.spec.ports).toContainEqual({
      name: "webhook",
      port: 443,
      targetPort: "webhook",
      protocol: "TCP",
    });

    const rbac = operatorRbac(
      { kind: "ServiceAccount", name: `${FULL}-operator`, namespace: NS },
      {
        name: `${FULL}-operator`,
        namespace: NS,
        leaseName: `${FULL}-operator`,
        tlsSecretName: `${FULL}-webhook-tls`,
        webhookConfigurationName: `${FULL}-sidecar-injector`,
        policyValidatorName: `${FULL}-policy-validator`,
      },
    ) as Obj[];
    for (const want of rbac) {
      const got = find(objs, want.kind, want.metadata.name);
      if (want.rules) expect(got.rules).toEqual(want.rules);
      if (want.subjects) {
        expect(got.subjects).toEqual(want.subjects);
        expect(got.roleRef).toEqual(want.roleRef);
      }
    }
  });

  it("CRDs: the chart's copies equal crds/, rendered with resource-policy keep", async () => {
    const files = readdirSync(path.join(root, "crds")).filter((f) => f.endsWith(".yaml"));
    expect(files.length).toBeGreaterThan(0);
    const { objs } = await render();
    for (const f of files) {
      const src = readFileSync(path.join(root, "crds", f), "utf8");
      expect(
        readFileSync(path.join(chart, "files/crds", f), "utf8"),
        `charts/tollgate/files/crds/${f} drifted`,
      ).toBe(src);
      const want = parseYaml(src) as Obj;
      const got = find(objs, "CustomResourceDefinition", want.metadata.name);
      expect(got.spec).toEqual(want.spec);
      expect(got.metadata.annotations["helm.sh/resource-policy"]).toBe("keep");
    }
  });

  it("variant render: external database, cert-manager, ServiceMonitors, dashboard, no CRDs", async () => {
    const { objs } = await render(VARIANT);
    expect(objs.some((o) => o.kind === "CustomResourceDefinition")).toBe(false);
    const svc = find(objs, "Deployment", FULL);
    expect(svc.spec.replicas).toBe(3);
    const c = svc.spec.template.spec.containers[0];
    expect(c.image).toBe("ghcr.io/tollgate/tollgate:1.2.3");
    expect(env(c, "DATABASE_URL").valueFrom.secretKeyRef).toEqual({ name: "tollgate-postgres", key: "url" });
    expect(c.resources).toEqual({ requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "512Mi" } });
    const mwc = find(objs, "MutatingWebhookConfiguration", `${FULL}-sidecar-injector`);
    expect(mwc.metadata.annotations["cert-manager.io/inject-ca-from"]).toBe(`${NS}/${FULL}-operator-webhook`);
    for (const w of mwc.webhooks) {
      expect(w.timeoutSeconds).toBe(10);
      expect(w.namespaceSelector.matchExpressions[1].values).toEqual(["kube-system", NS, "monitoring"]);
    }
    const vwc = find(objs, "ValidatingWebhookConfiguration", `${FULL}-policy-validator`);
    expect(vwc.metadata.annotations["cert-manager.io/inject-ca-from"]).toBe(`${NS}/${FULL}-operator-webhook`);
    expect(vwc.webhooks[0].timeoutSeconds).toBe(10);
    expect(vwc.webhooks[0].namespaceSelector.matchExpressions[0].values).toEqual([
      "kube-system",
      NS,
      "monitoring",
    ]);
    const cert = find(objs, "Certificate", `${FULL}-operator-webhook`);
    expect(cert.spec.dnsNames).toContain(`${FULL}-operator.${NS}.svc`);
    find(objs, "Issuer", `${FULL}-operator-selfsigned`);
    const op = find(objs, "Deployment", `${FULL}-operator`);
    expect(env(op.spec.template.spec.containers[0], "TOLLGATE_WEBHOOK_CERT_MODE").value).toBe("cert-manager");
    expect(op.spec.template.spec.volumes).toContainEqual({
      name: "webhook-certs",
      secret: { secretName: cert.spec.secretName, defaultMode: 0o440 },
    });
    expect(find(objs, "ServiceMonitor", FULL).spec.endpoints[0]).toMatchObject({
      port: "http",
      path: "/metrics",
    });
    expect(find(objs, "ServiceMonitor", `${FULL}-operator`).spec.endpoints[0].port).toBe("metrics");

    const cm = find(objs, "ConfigMap", `${FULL}-dashboard`);
    expect(cm.metadata.labels.grafana_dashboard).toBe("1");
    const dashboard = JSON.parse(cm.data["tollgate.json"]);
    const exprs = JSON.stringify(dashboard.panels.flatMap((p: Obj) => p.targets.map((t: Obj) => t.expr)));
    for (const metric of [
      "tollgate_decisions_total",
      "tollgate_record_action_duration_seconds_bucket",
      "tollgate_approvals_pending",
      "tollgate_approval_wait_seconds_bucket",
      "tollgate_receipts_issued_total",
      "tollgate_verification_results_total",
      "tollgate_legacy_route_requests_total",
      "tollgate_outbox_backlog",
    ]) {
      expect(exprs).toContain(metric);
    }
  });

  it("alerts: off by default; on, the PrometheusRule ships files/alerts.yaml unchanged minus alerts.disabled, plus ruleLabels", async () => {
    const plain = await render();
    expect(plain.objs.some((o) => o.kind === "PrometheusRule")).toBe(false);

    const file = parseYaml(readFileSync(path.join(chart, "files/alerts.yaml"), "utf8")) as Obj;
    const { objs } = await render([
      "alerts.enabled=true",
      "alerts.labels.release=prometheus",
      "alerts.ruleLabels.team=platform",
      "alerts.ruleLabels.severity=page",
      "alerts.disabled={TollgateMailOutboxBehind,TollgateWebhookSlow}",
    ]);
    const rule = find(objs, "PrometheusRule", FULL);
    expect(rule.apiVersion).toBe("monitoring.coreos.com/v1");
    expect(rule.metadata.namespace).toBe(NS);
    expect(rule.metadata.labels.release).toBe("prometheus");
    const wanted = file.groups.map((g: Obj) => ({
      name: g.name,
      rules: g.rules
        .filter((r: Obj) => !["TollgateMailOutboxBehind", "TollgateWebhookSlow"].includes(r.alert))
        .map((r: Obj) => ({ ...r, labels: { ...r.labels, team: "platform", severity: "page" } })),
    }));
    expect(rule.spec.groups).toEqual(wanted);
    // Prometheus's templates in the annotations pass through Helm untouched.
    expect(JSON.stringify(rule.spec)).toContain("{{ $labels.pod }}");
    // The rendered groups are a valid rule file.
    const dir = mkdtempSync(path.join(tmpdir(), "tollgate-chart-rules-"));
    try {
      writeFileSync(path.join(dir, "rules.json"), JSON.stringify({ groups: rule.spec.groups }));
      const check = promtool(["check", "rules", path.join(dir, "rules.json")]);
      expect(check.code, check.output).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    const noOperator = await render(["alerts.enabled=true", "operator.enabled=false"]);
    const groups = find(noOperator.objs, "PrometheusRule", FULL).spec.groups.map((g: Obj) => g.name);
    expect(groups).toEqual(["tollgate-service", "tollgate-sidecar"]);

    const bad = await helm(["template", RELEASE, chart, "-n", NS, "--set", "alerts.disabled={NoSuchThing}"]);
    expect(bad.code).not.toBe(0);
  });

  it("agrees with the Dockerfile: commands, the sidecar stage, the non-root user", async () => {
    const dockerfile = readFileSync(path.join(root, "Dockerfile"), "utf8");
    const values = parseYaml(readFileSync(path.join(chart, "values.yaml"), "utf8")) as Obj;
    const stage = (name: string) =>
      dockerfile.split(/^FROM /m).find((s) => s.includes(` AS ${name}\n`)) ?? "";
    const cmd = (name: string) => JSON.parse(stage(name).match(/^CMD (\[.*\])$/m)?.[1] ?? "null");
    expect(cmd("tollgate")).toEqual(values.service.command);
    expect(cmd("sidecar")).toEqual(["node", "dist/sidecar.js"]);
    // The operator runs from the same image with its own command; its bundle is in the image.
    expect(values.operator.command).toEqual(["node", "dist/operator.js"]);
    expect(stage("base")).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(stage("build")).toMatch(/^RUN npm run build$/m);
    // The sidecar image defaults to the V8 flags the webhook injects.
    const nodeOptions = stage("sidecar").match(/^ENV NODE_OPTIONS="(.*)"$/m)?.[1];
    expect(nodeOptions).toBe(SIDECAR_NODE_OPTIONS);
    // ... and so do the chart's values (documented in values.yaml with their measurements).
    expect(values.sidecar.nodeOptions).toBe(SIDECAR_NODE_OPTIONS);
    expect(values.sidecar.resources).toEqual(DEFAULT_SIDECAR_RESOURCES);
    expect(values.sidecar.ports).toEqual(DEFAULT_SIDECAR_PORTS);
    const exposed = (stage("sidecar").match(/^EXPOSE (.*)$/m)?.[1] ?? "").split(/\s+/).map(Number);
    expect(exposed).toEqual(expect.arrayContaining([values.sidecar.ports.grpc, values.sidecar.ports.http]));
    const user = stage("base").match(/^USER (\d+):(\d+)$/m);
    expect(user?.slice(1).map(Number)).toEqual([
      values.podSecurityContext.runAsUser,
      values.podSecurityContext.runAsGroup,
    ]);
    // The default build (last stage) is the service image.
    expect(
      dockerfile
        .trim()
        .split(/^FROM /m)
        .pop(),
    ).toMatch(/^base AS tollgate\n/);
  });

  it("rejects unknown values (strict schema) and impossible combinations", async () => {
    const typo = await helm(["template", RELEASE, chart, "--set", "service.replica=2"]);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/replica/);
    const badFlags = await helm(["template", RELEASE, chart, "--set", "service.nodeOptions=max-old-space"]);
    expect(badFlags.code).not.toBe(0);
    expect(badFlags.stderr).toMatch(/nodeOptions/);
    const badLog = await helm(["template", RELEASE, chart, "--set", "service.logLevel=verbose"]);
    expect(badLog.code).not.toBe(0);
    expect(badLog.stderr).toMatch(/logLevel/);
    const pglite = await helm(["template", RELEASE, chart, "--set", "service.replicas=2"]);
    expect(pglite.code).not.toBe(0);
    expect(pglite.stderr).toMatch(/database\.existingSecret/);
    const lease = await helm([
      "template",
      RELEASE,
      chart,
      "--set",
      "operator.leaderElection.renewDeadlineSeconds=20",
    ]);
    expect(lease.code).not.toBe(0);
    expect(lease.stderr).toMatch(/renewDeadlineSeconds/);
  });

  it.each([
    [["serviceAccount.create=false"], /serviceAccount/],
    [["service.serviceAccount.annotation.x=y"], /annotation/],
    [["operator.image.pullPolicy=Sometimes"], /pullPolicy/],
    [["sidecar.image.pullPolicy=Sometimes"], /pullPolicy/],
    [["sidecar.ports.metrics=70000"], /metrics/],
    [["sidecar.ports.http=9091"], /sidecar\.ports.*must differ/],
    [["sidecar.nodeOptions=max-old-space-size=96"], /nodeOptions/],
    [["sidecar.resources.request.cpu=1"], /request/],
    [["sidecar.podMonitor.interval=often"], /interval/],
    [["ingress.enabled=true"], /ingress\.hosts/],
    [["ingress.enabled=true", "ingress.hosts[0].host=Not_A_Host"], /host/],
    [["ingress.enabled=true", "ingress.hosts[0].host=a.example", "ingress.hosts[0].paths[0].path=x"], /path/],
    [["service.topologySpreadConstraints[0].maxSkew=1"], /topologyKey/],
    [["service.priorityClassName=Not Valid"], /priorityClassName/],
  ])("rejects %s", async (set, message) => {
    const r = await helm(["template", RELEASE, chart, ...set.flatMap((s) => ["--set", s])]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
  });

  it("kubectl apply --dry-run=server accepts the default render", async () => {
    const { text } = await render();
    const out = await k(["apply", "--dry-run=server", "-n", NS, "-f", "-"], text);
    expect(out).toMatch(
      /mutatingwebhookconfiguration.admissionregistration.k8s.io\/tg-tollgate-sidecar-injector created \(server dry run\)/,
    );
    expect(out).toMatch(
      /validatingwebhookconfiguration.admissionregistration.k8s.io\/tg-tollgate-policy-validator created \(server dry run\)/,
    );
    expect(out).toMatch(/deployment.apps\/tg-tollgate-operator created \(server dry run\)/);
  });

  it("helm install, upgrade, uninstall and reinstall: secrets are generated once and kept with the CRDs", async () => {
    const install = await helm(["install", RELEASE, chart, "-n", NS]);
    expect(install.code, install.stderr).toBe(0);
    // NOTES: how injected sidecars are found and scraped.
    expect(install.stdout).toContain(
      "Injected pods carry the label tollgate.dev/sidecar=injected; the sidecar serves /metrics on its port http-metrics (9091).",
    );
    expect(install.stdout).not.toContain("Public:");
    const read = async () =>
      JSON.parse(await k(["get", "secret", `${FULL}-secrets`, "-n", NS, "-o", "json"])).data;
    const first = await read();
    const upgrade = await helm(["upgrade", RELEASE, chart, "-n", NS, "--set", "service.logLevel=debug"]);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(await read()).toEqual(first);
    const dep = JSON.parse(await k(["get", "deployment", FULL, "-n", NS, "-o", "json"]));
    expect(env(dep.spec.template.spec.containers[0], "LOG_LEVEL").value).toBe("debug");

    const uninstall = await helm(["uninstall", RELEASE, "-n", NS]);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    expect(await read()).toEqual(first);
    await k(["get", "crd", "organizations.tollgate.dev"]);
    const gone = await kubectl(cp, ["get", "deployment", FULL, "-n", NS]);
    expect(gone.code).not.toBe(0);

    // Installing again adopts the kept Secret and CRDs: the same master key, so earlier receipts
    // stay verifiable.
    const again = await helm(["install", RELEASE, chart, "-n", NS]);
    expect(again.code, again.stderr).toBe(0);
    expect(await read()).toEqual(first);
    const last = await helm(["uninstall", RELEASE, "-n", NS]);
    expect(last.code, last.stderr).toBe(0);
  });

  it("kubectl apply --dry-run=server accepts the variant render (CRDs installed, cert-manager and Prometheus Operator kinds registered)", async () => {
    // The variant leaves CRDs out (crds.enabled=false): the previous test's install kept them.
    // cert-manager's and the Prometheus Operator's kinds are registered as schemaless CRDs so the
    // API server admits them; their field schemas are not what this test checks.
    const stub = (group: string, kind: string, plural: string) => ({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${group}` },
      spec: {
        group,
        scope: "Namespaced",
        names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [
          {
            name: "v1",
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        ],
      },
    });
    const stubs = [
      stub("cert-manager.io", "Certificate", "certificates"),
      stub("cert-manager.io", "Issuer", "issuers"),
      stub("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
      stub("monitoring.coreos.com", "PodMonitor", "podmonitors"),
    ];
    await k(["apply", "-f", "-"], stubs.map((s) => JSON.stringify(s)).join("\n"));
    await k(["wait", "--for", "condition=established", "crd", "--all", "--timeout=60s"]);
    const { text } = await render(VARIANT);
    const out = await k(["apply", "--dry-run=server", "-n", NS, "-f", "-"], text);
    expect(out).toMatch(
      /certificate.cert-manager.io\/tg-tollgate-operator-webhook created \(server dry run\)/,
    );
    expect(out).toMatch(/servicemonitor.monitoring.coreos.com\/tg-tollgate created \(server dry run\)/);
    expect(out).toMatch(/configmap\/tg-tollgate-dashboard created \(server dry run\)/);

    // The conventions render: the Ingress, the PodMonitor, Deployments with scheduling fields and a
    // ServiceAccount of the user's (created here, as the user would).
    await k(["create", "serviceaccount", "tollgate-operator-wi", "-n", NS]);
    const conventions = await render(CONVENTIONS);
    const applied = await k(["apply", "--dry-run=server", "-n", NS, "-f", "-"], conventions.text);
    expect(applied).toMatch(/ingress.networking.k8s.io\/tg-tollgate created \(server dry run\)/);
    expect(applied).toMatch(
      /podmonitor.monitoring.coreos.com\/tg-tollgate-sidecar created \(server dry run\)/,
    );
    expect(applied).toMatch(/deployment.apps\/tg-tollgate-operator created \(server dry run\)/);
    expect(applied).toMatch(/serviceaccount\/tg-tollgate created \(server dry run\)/);
  });
});
