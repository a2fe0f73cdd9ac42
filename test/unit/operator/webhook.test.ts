import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createOperatorLogger } from "../../../operator/log.js";
import { createOperatorMetrics } from "../../../operator/metrics.js";
import {
  createCa,
  createServingCert,
  createWebhookPki,
  pkiUsable,
  serviceDnsNames,
} from "../../../operator/webhook/certs.js";
import { sidecarInjectorConfiguration } from "../../../operator/webhook/configuration.js";
import { applyPatch, type PodLike } from "../../../operator/webhook/patch.js";
import { review, startWebhookServer } from "../../../operator/webhook/server.js";

const cfg = { image: "ghcr.io/tollgate/sidecar:1", serviceUrl: "http://svc:8000" };
const labelled = (name: string) => ({
  name,
  labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": "acme" },
});
const governed = { cached: async (n: string) => labelled(n), fresh: async (n: string) => labelled(n) };
const request = (object: unknown, over: Record<string, unknown> = {}) => ({
  uid: "u-1",
  kind: { group: "", version: "v1", kind: "Pod" },
  namespace: "agents",
  operation: "CREATE",
  object: object as Record<string, unknown>,
  ...over,
});

describe("webhook PKI", () => {
  it("issues a CA and a serving certificate for the service names and extra SANs", async () => {
    const hosts = [...serviceDnsNames("tollgate-operator", "tollgate-system"), "127.0.0.1"];
    const pki = await createWebhookPki(hosts);
    const ca = new X509Certificate(pki.caCert);
    const cert = new X509Certificate(pki.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain("DNS:tollgate-operator.tollgate-system.svc");
    expect(cert.subjectAltName).toContain("IP Address:127.0.0.1");
    expect(cert.checkHost("tollgate-operator.tollgate-system.svc.cluster.local")).toBeDefined();
    expect(pki.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(await pkiUsable(pki, hosts)).toBe(true);
  });

  it("refuses stored PKI that misses a host, expires soon, or was signed by another CA", async () => {
    const pki = await createWebhookPki(["a.svc"]);
    expect(await pkiUsable(pki, ["a.svc", "b.svc"])).toBe(false);
    const old = new Date(Date.now() - 340 * 86_400_000);
    const ca = await createCa("old");
    const expiring = { caCert: ca.cert, caKey: ca.key, ...(await createServingCert(ca, ["a.svc"], old)) };
    expect(await pkiUsable(expiring, ["a.svc"])).toBe(false);
    const other = await createCa("other");
    expect(await pkiUsable({ ...pki, caCert: other.cert, caKey: other.key }, ["a.svc"])).toBe(false);
  });
});

describe("review", () => {
  it("injects a pod of a governed namespace with a base64 JSONPatch", async () => {
    const pod: PodLike = {
      metadata: { name: "p", labels: { app: "bot" } },
      spec: { containers: [{ name: "bot" }] },
    };
    const r = await review(request(pod), cfg, governed);
    expect(r.outcome).toBe("injected");
    expect(r.response).toMatchObject({ uid: "u-1", allowed: true, patchType: "JSONPatch" });
    const patch = JSON.parse(Buffer.from(r.response.patch!, "base64").toString());
    const out = applyPatch(pod, patch) as { spec: { containers: Array<{ name: string }> } };
    expect(out.spec.containers.map((c) => c.name)).toEqual(["tollgate-sidecar", "bot"]);
  });

  it("decides again with fresh labels when the cache says the namespace is not selected", async () => {
    const stale = {
      cached: async (n: string) => ({ name: n, labels: {} }),
      fresh: async (n: string) => labelled(n),
    };
    const pod = { metadata: { name: "p" }, spec: { containers: [{ name: "a" }] } };
    expect((await review(request(pod), cfg, stale)).outcome).toBe("injected");
    const unlabelled = {
      cached: async (n: string) => ({ name: n, labels: {} }),
      fresh: async (n: string) => ({ name: n, labels: {} }),
    };
    expect((await review(request(pod), cfg, unlabelled)).outcome).toBe("skipped");
  });

  it.each([
    ["a non-pod object", request({}, { kind: { group: "apps", version: "v1", kind: "Deployment" } })],
    ["an UPDATE", request({ metadata: {} }, { operation: "UPDATE" })],
  ])("lets %s through untouched", async (_what, req) => {
    const r = await review(req, cfg, governed);
    expect(r).toEqual({ response: { uid: "u-1", allowed: true }, outcome: "skipped" });
  });

  it("denies with a 403 status naming the annotation", async () => {
    const r = await review(
      request({
        metadata: { name: "p", annotations: { "tollgate.dev/upstreams": "[" } },
        spec: { containers: [] },
      }),
      cfg,
      governed,
    );
    expect(r.outcome).toBe("denied");
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(403);
    expect(r.response.status?.message).toContain("tollgate.dev/upstreams");
  });
});

describe("webhook server", () => {
  it("answers AdmissionReviews over HTTPS and rejects malformed ones with 400", async () => {
    const pki = await createWebhookPki(["127.0.0.1"]);
    const metrics = createOperatorMetrics({ defaultMetrics: false });
    const server = await startWebhookServer({
      host: "127.0.0.1",
      port: 0,
      tls: pki,
      injection: cfg,
      namespaces: governed,
      metrics,
      log: createOperatorLogger({ level: "silent" }),
    });
    try {
      const res = await server.app.inject({
        method: "POST",
        url: "/mutate",
        payload: {
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          request: request({ metadata: { name: "p" }, spec: { containers: [{ name: "a" }] } }),
        },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: { uid: "u-1", allowed: true, patchType: "JSONPatch" },
      });
      const bad = await server.app.inject({
        method: "POST",
        url: "/mutate",
        payload: { kind: "AdmissionReview" },
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().message).toMatch(/invalid AdmissionReview: apiVersion/);
      const text = await metrics.registry.metrics();
      expect(text).toContain('tollgate_operator_webhook_admissions_total{outcome="injected"} 1');
      expect(text).toContain('tollgate_operator_webhook_admissions_total{outcome="error"} 1');
    } finally {
      await server.close();
    }
  });
});

describe("sidecarInjectorConfiguration", () => {
  it("excludes kube-system and the operator namespace, fails closed, has no side effects", () => {
    const c = sidecarInjectorConfiguration({
      target: { service: { name: "tollgate-operator", namespace: "tollgate-system", port: 443 } },
      operatorNamespace: "tollgate-system",
      caPem: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
    }) as any;
    expect(c.metadata.name).toBe("tollgate-sidecar-injector");
    for (const w of c.webhooks) {
      expect(w).toMatchObject({
        sideEffects: "None",
        failurePolicy: "Fail",
        timeoutSeconds: 5,
        admissionReviewVersions: ["v1"],
      });
      expect(w.namespaceSelector.matchExpressions).toContainEqual({
        key: "kubernetes.io/metadata.name",
        operator: "NotIn",
        values: ["kube-system", "tollgate-system"],
      });
      expect(w.clientConfig.service).toEqual({
        name: "tollgate-operator",
        namespace: "tollgate-system",
        port: 443,
        path: "/mutate",
      });
      expect(Buffer.from(w.clientConfig.caBundle, "base64").toString()).toContain("BEGIN CERTIFICATE");
    }
  });

  it("with cert-manager, leaves the caBundle to its CA injector", () => {
    const c = sidecarInjectorConfiguration({
      target: { url: "https://127.0.0.1:9443/mutate" },
      operatorNamespace: "tollgate",
      certManagerCertificate: "tollgate/tollgate-webhook",
    }) as any;
    expect(c.metadata.annotations).toEqual({ "cert-manager.io/inject-ca-from": "tollgate/tollgate-webhook" });
    expect(c.webhooks[0].clientConfig).toEqual({ url: "https://127.0.0.1:9443/mutate" });
  });
});
