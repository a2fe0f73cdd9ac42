import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningOperator } from "../../operator/operator.js";
import { operatorRbac } from "../../operator/rbac.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { issueCertificate } from "../support/controlplane.js";
import { startTestService, type TestService } from "../support/service.js";
import {
  type KubeEnv,
  OPERATOR_NAMESPACE,
  root,
  startKubeEnv,
  startTestOperator,
  testOperatorConfig,
  tokenFile,
  waitFor,
  waitForEvent,
  waitReady,
} from "./helpers.js";

const USER = "tollgate-operator";

describe("the operator runs with only the RBAC of operator/rbac.ts", () => {
  let env: KubeEnv;
  let svc: TestService;
  let op: RunningOperator;

  beforeAll(async () => {
    env = await startKubeEnv();
    svc = await startTestService({ listen: true });
    // A client certificate for an unprivileged user, and a kubeconfig that uses it.
    const cert = await issueCertificate(
      env.cp.dir,
      "operator-user",
      { cert: env.cp.certs.clientCaCertPath, key: env.cp.certs.clientCaKeyPath },
      `/CN=${USER}`,
      [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature",
        "extendedKeyUsage=clientAuth",
      ],
    );
    const b64 = async (p: string) => (await readFile(p)).toString("base64");
    const kubeconfigPath = path.join(env.cp.dir, "operator-kubeconfig");
    await writeFile(
      kubeconfigPath,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "c",
            cluster: { server: env.cp.server, "certificate-authority-data": await b64(env.cp.caCertPath) },
          },
        ],
        users: [
          {
            name: USER,
            user: { "client-certificate-data": await b64(cert.cert), "client-key-data": await b64(cert.key) },
          },
        ],
        contexts: [{ name: "c", context: { cluster: "c", user: USER } }],
        "current-context": "c",
      }),
      { mode: 0o600 },
    );
    await env.apply(
      ...operatorRbac(
        { kind: "User", name: USER, apiGroup: "rbac.authorization.k8s.io" },
        { namespace: OPERATOR_NAMESPACE },
      ),
    );
    op = await startTestOperator(
      testOperatorConfig(
        env,
        { serviceUrl: svc.url, adminTokenFile: await tokenFile(env, svc), identity: "least-privilege" },
        { kubeconfigPath },
      ),
    );
    await op.whenReconciling();
  });
  afterAll(async () => {
    await op?.stop();
    await svc?.close();
    await env?.stop();
  });

  it("grants no access to other Secrets", async () => {
    const can = async (...a: string[]) =>
      (await env.kTry(["auth", "can-i", ...a, `--as=${USER}`])).stdout.trim();
    expect(await can("get", "secrets/tollgate-api-key", "-n", "team-a")).toBe("yes");
    expect(await can("get", "secrets/database-password", "-n", "team-a")).toBe("no");
    expect(await can("list", "secrets", "-n", "team-a")).toBe("no");
    expect(await can("delete", "pods", "-n", "team-a")).toBe("no");
  });

  it("reconciles, mints keys, finalizes and injects with those permissions", async () => {
    await env.k(["apply", "-f", path.join(root, "examples")]);
    await waitReady(env, "organization", "acme");
    await waitReady(env, "governancepolicy", "payments", "acme-agents");
    await waitReady(env, "approverteam", "finance", "acme-agents");
    await waitFor("API key Secret", () => env.get("secret", "tollgate-api-key", "acme-agents"));

    await env.apply(
      sidecarInjectorConfiguration({
        target: { url: `https://127.0.0.1:${op.webhookPort}/mutate` },
        operatorNamespace: OPERATOR_NAMESPACE,
      }),
    );
    await waitFor("caBundle", async () => {
      const c = await env.get("mutatingwebhookconfiguration", "tollgate-sidecar-injector");
      return c.webhooks.every((w: { clientConfig: { caBundle?: string } }) => w.clientConfig.caBundle);
    });
    await env.apply({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "agent", namespace: "acme-agents" },
      spec: { containers: [{ name: "agent", image: "agent:1" }] },
    });
    const pod = await env.get("pod", "agent", "acme-agents");
    expect(pod.spec.containers.map((c: { name: string }) => c.name)).toEqual(["agent", "tollgate-sidecar"]);

    await env.k([
      "delete",
      "governancepolicy",
      "payments",
      "-n",
      "acme-agents",
      "--wait=true",
      "--timeout=60s",
    ]);
    const org = (await svc.call("GET", "/v1/admin/organizations/acme", { token: svc.adminToken })).json();
    expect(org.policies).toEqual([]);
    // Recording Events is allowed too.
    await waitForEvent(env, { reason: "Synced" });
    await waitForEvent(env, { reason: "ApiKeyMinted" });
  });
});
