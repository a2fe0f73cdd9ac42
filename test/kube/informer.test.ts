import type { V1Namespace } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadKubeClients } from "../../operator/kube/clients.js";
import { type RunningInformer, startInformer } from "../../operator/kube/informer.js";
import { createOperatorLogger } from "../../operator/log.js";
import { useKubeEnv, userKubeconfig, waitFor } from "./helpers.js";

const USER = "informer-user";
const role = (verbs: string[]) => ({
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: USER },
  rules: [{ apiGroups: [""], resources: ["namespaces"], verbs }],
});

describe("informers against a real API server", () => {
  const fx = useKubeEnv();
  let kubeconfigPath: string;
  let informer: RunningInformer<V1Namespace> | undefined;

  beforeAll(async () => {
    kubeconfigPath = await userKubeconfig(fx.env, USER);
  });
  afterAll(async () => {
    await informer?.stop();
  });

  it("backs off 1 s, 2 s, 4 s ... while the watch fails, then recovers and delivers events", async () => {
    // The user may list namespaces but not watch them: every watch answers 403.
    await fx.env.apply(role(["list"]), {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: USER },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: USER },
      subjects: [{ kind: "User", name: USER, apiGroup: "rbac.authorization.k8s.io" }],
    });
    const { kc, core } = loadKubeClients(kubeconfigPath);
    const delays: number[] = [];
    const seen: string[] = [];
    informer = startInformer<V1Namespace>({
      kc,
      path: "/api/v1/namespaces",
      list: () => core.listNamespace(),
      log: createOperatorLogger({ level: "silent" }),
      // Injected delay: records the requested backoff, waits only 50 ms.
      delay: async (ms) => {
        delays.push(ms);
        await new Promise((r) => setTimeout(r, 50));
      },
      onAdd: (ns) => seen.push(ns.metadata!.name!),
    });
    await informer.synced;
    expect(informer.get("kube-system")?.metadata?.name).toBe("kube-system");
    await waitFor("five failed watches", async () => delays.length >= 5);
    expect(delays.slice(0, 5)).toEqual([1000, 2000, 4000, 8000, 16000]);

    await fx.env.apply(role(["list", "watch"]));
    await fx.env.k(["create", "namespace", "late-arrival"]);
    await waitFor("the informer sees the new namespace", async () => seen.includes("late-arrival"));
    expect(informer.get("late-arrival")?.metadata?.name).toBe("late-arrival");
  });
});
