import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ControlPlane, startControlPlane } from "../support/controlplane.ts";
import { kubectl } from "../support/kubectl.ts";

describe("test control plane (etcd + kube-apiserver)", () => {
  let cp: ControlPlane;

  beforeAll(async () => {
    cp = await startControlPlane({ log: (msg) => console.log(msg) });
  }, 120_000);

  afterAll(async () => {
    await cp?.stop();
  }, 30_000);

  it("answers /readyz through kubectl with the admin kubeconfig", async () => {
    const r = await kubectl(cp, ["get", "--raw", "/readyz"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("ok");
  });

  it("grants the admin user cluster-admin via system:masters", async () => {
    const r = await kubectl(cp, ["auth", "can-i", "*", "*", "--all-namespaces"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("yes");
  });

  it("creates a namespace from stdin and reads it back", async () => {
    const manifest = [
      "apiVersion: v1",
      "kind: Namespace",
      "metadata:",
      "  name: tollgate-smoke",
      "  labels:",
      "    tollgate.dev/test: controlplane",
      "",
    ].join("\n");
    const applied = await kubectl(cp, ["apply", "-f", "-"], { input: manifest });
    expect(applied.stderr).toBe("");
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain("namespace/tollgate-smoke created");

    const got = await kubectl(cp, ["get", "namespace", "tollgate-smoke", "-o", "json"]);
    expect(got.code).toBe(0);
    const ns = JSON.parse(got.stdout) as { metadata: { name: string; labels: Record<string, string> } };
    expect(ns.metadata.name).toBe("tollgate-smoke");
    expect(ns.metadata.labels["tollgate.dev/test"]).toBe("controlplane");
  });
});
