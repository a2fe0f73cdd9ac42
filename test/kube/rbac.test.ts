import path from "node:path";
import { describe, expect, it } from "vitest";
import { operatorRbac } from "../../operator/rbac.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import {
  OPERATOR_NAMESPACE,
  root,
  useOperatorEnv,
  userKubeconfig,
  waitFor,
  waitForEvent,
  waitReady,
} from "./helpers.js";

const USER = "tollgate-operator";

describe("the operator runs with only the RBAC of operator/rbac.ts", () => {
  // The operator authenticates as an unprivileged user that has only the operator's RBAC.
  const fx = useOperatorEnv({
    identity: "least-privilege",
    async prepare(f) {
      const kubeconfigPath = await userKubeconfig(f.env, USER);
      await f.env.apply(
        ...operatorRbac(
          { kind: "User", name: USER, apiGroup: "rbac.authorization.k8s.io" },
          { namespace: OPERATOR_NAMESPACE },
        ),
      );
      return { kubeconfigPath };
    },
  });

  it("grants no access to other Secrets", async () => {
    const can = async (...a: string[]) =>
      (await fx.env.kTry(["auth", "can-i", ...a, `--as=${USER}`])).stdout.trim();
    expect(await can("get", "secrets/tollgate-api-key", "-n", "team-a")).toBe("yes");
    expect(await can("get", "secrets/database-password", "-n", "team-a")).toBe("no");
    expect(await can("list", "secrets", "-n", "team-a")).toBe("no");
    expect(await can("delete", "pods", "-n", "team-a")).toBe("no");
  });

  it("reconciles, mints keys, finalizes and injects with those permissions", async () => {
    await fx.env.k(["apply", "-f", path.join(root, "examples")]);
    await waitReady(fx.env, "organization", "acme");
    await waitReady(fx.env, "governancepolicy", "payments", "acme-agents");
    await waitReady(fx.env, "approverteam", "finance", "acme-agents");
    await waitFor("API key Secret", () => fx.env.get("secret", "tollgate-api-key", "acme-agents"));

    await fx.env.apply(
      sidecarInjectorConfiguration({
        target: { url: `https://127.0.0.1:${fx.op!.webhookPort}/mutate` },
        operatorNamespace: OPERATOR_NAMESPACE,
      }),
    );
    await waitFor("caBundle", async () => {
      const c = await fx.env.get("mutatingwebhookconfiguration", "tollgate-sidecar-injector");
      return c.webhooks.every((w: { clientConfig: { caBundle?: string } }) => w.clientConfig.caBundle);
    });
    await fx.env.apply({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "agent", namespace: "acme-agents" },
      spec: { containers: [{ name: "agent", image: "agent:1" }] },
    });
    const pod = await fx.env.get("pod", "agent", "acme-agents");
    // Container mode (the operator's default here): the sidecar is the first container, so its
    // postStart wait holds the agent's start until it is ready (README "Sidecar start-up order").
    expect(pod.spec.containers.map((c: { name: string }) => c.name)).toEqual(["tollgate-sidecar", "agent"]);

    await fx.env.k([
      "delete",
      "governancepolicy",
      "payments",
      "-n",
      "acme-agents",
      "--wait=true",
      "--timeout=60s",
    ]);
    const org = (
      await fx.svc.call("GET", "/v1/admin/organizations/acme", { token: fx.svc.adminToken })
    ).json();
    expect(org.policies).toEqual([]);
    // Recording Events is allowed too.
    await waitForEvent(fx.env, { reason: "Synced" });
    await waitForEvent(fx.env, { reason: "ApiKeyMinted" });
  });
});
