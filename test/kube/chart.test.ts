/**
 * The Helm chart (charts/tollgate) against the real control plane (issue 8): `helm lint --strict`,
 * `helm template` with default values and with a production-like variant, invariants of the
 * render (security context, PDB, probes, webhook, RBAC equal to operator/rbac.ts, CRDs equal to
 * crds/), schema and render-time rejections, `kubectl apply --dry-run=server` of both renders,
 * and a real `helm install` / `upgrade` / `uninstall` showing that the generated secrets are
 * never rotated and that Secret and CRDs are kept.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { operatorRbac } from "../../operator/rbac.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { SIDECAR_NODE_OPTIONS } from "../../operator/webhook/patch.js";
import { type ControlPlane, startControlPlane } from "../support/controlplane.js";
import { kubectl } from "../support/kubectl.js";

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
    expect(c.resources).toEqual({ requests: { cpu: "100m", memory: "640Mi" }, limits: { memory: "1280Mi" } });
    expect(env(c, "TOLLGATE_MASTER_KEY_FILE").value).toBe("/var/run/tollgate/secrets/master-key");
    expect(svc.spec.template.spec.automountServiceAccountToken).toBe(false);

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
    expect(objs.some((o) => o.kind === "ServiceMonitor" || o.kind === "Certificate")).toBe(false);
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
    for (const w of mwc.webhooks) {
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

  it("kubectl apply --dry-run=server accepts the default render", async () => {
    const { text } = await render();
    const out = await k(["apply", "--dry-run=server", "-n", NS, "-f", "-"], text);
    expect(out).toMatch(
      /mutatingwebhookconfiguration.admissionregistration.k8s.io\/tg-tollgate-sidecar-injector created \(server dry run\)/,
    );
    expect(out).toMatch(/deployment.apps\/tg-tollgate-operator created \(server dry run\)/);
  });

  it("helm install, upgrade, uninstall and reinstall: secrets are generated once and kept with the CRDs", async () => {
    const install = await helm(["install", RELEASE, chart, "-n", NS]);
    expect(install.code, install.stderr).toBe(0);
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
  });
});
