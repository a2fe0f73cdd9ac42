import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";
import {
  httpGet,
  type KubeEnv,
  metricValue,
  OPERATOR_NAMESPACE,
  type OperatorProcess,
  spawnOperator,
  startKubeEnv,
  tokenFile,
  waitFor,
  waitReady,
} from "./helpers.js";

interface LeaseObject {
  spec: {
    holderIdentity?: string | null;
    leaseTransitions?: number;
    renewTime?: string;
    acquireTime?: string;
  };
}

describe("leader election between two operator processes", () => {
  let env: KubeEnv;
  let svc: TestService;
  let a: OperatorProcess;
  let b: OperatorProcess;
  const lease = () => env.get<LeaseObject>("lease", "tollgate-operator", OPERATOR_NAMESPACE);
  const leaderGauge = async (p: OperatorProcess) =>
    metricValue((await httpGet(`http://127.0.0.1:${p.healthPort}/metrics`)).body, "tollgate_operator_leader");
  const organization = (name: string) => ({
    apiVersion: "tollgate.dev/v1alpha1",
    kind: "Organization",
    metadata: { name },
    spec: { slug: name },
  });

  beforeAll(async () => {
    env = await startKubeEnv();
    svc = await startTestService({ listen: true });
    const adminTokenFile = await tokenFile(env, svc);
    [a, b] = await Promise.all([
      spawnOperator(env, { serviceUrl: svc.url, adminTokenFile, identity: "replica-a" }),
      spawnOperator(env, { serviceUrl: svc.url, adminTokenFile, identity: "replica-b" }),
    ]);
  });
  afterAll(async () => {
    await a?.kill();
    await b?.kill();
    await svc?.close();
    await env?.stop();
  });

  it("exactly one replica leads and reconciles", async () => {
    const held = await waitFor("a Lease holder", async () => {
      const l = await lease();
      return l?.spec.holderIdentity ? l : undefined;
    });
    const leader = held.spec.holderIdentity === "replica-a" ? a : b;
    const follower = leader === a ? b : a;
    await waitFor("leader gauge", async () => (await leaderGauge(leader)) === 1);
    expect(await leaderGauge(follower)).toBe(0);

    await env.apply(organization("first"));
    await waitReady(env, "organization", "first");
    const m = (await httpGet(`http://127.0.0.1:${follower.healthPort}/metrics`)).body;
    expect(
      metricValue(m, "tollgate_operator_reconciles_total", '{kind="Organization",result="success"}'),
    ).toBeUndefined();
    // Both replicas serve readiness (the webhook runs on every replica).
    expect((await httpGet(`http://127.0.0.1:${follower.healthPort}/readyz`)).status).toBe(200);
  });

  it("when the leader is killed, the other replica takes over and reconciles", async () => {
    const before = (await lease())!;
    const leader = before.spec.holderIdentity === "replica-a" ? a : b;
    const follower = leader === a ? b : a;
    const killedAt = Date.now();
    await leader.kill();
    const after = await waitFor(
      "the follower holds the Lease",
      async () => {
        const l = await lease();
        return l?.spec.holderIdentity === follower.identity ? l : undefined;
      },
      60_000,
      100,
    );
    const takeoverMs = Date.now() - killedAt;
    console.log(
      `leader failover: ${follower.identity} took over ${takeoverMs} ms after the kill (lease duration 4000 ms)`,
    );
    expect(after.spec.leaseTransitions).toBe((before.spec.leaseTransitions ?? 0) + 1);
    await waitFor("new leader gauge", async () => (await leaderGauge(follower)) === 1);

    await env.apply(organization("second"));
    await waitReady(env, "organization", "second");
    expect(
      (await svc.call("GET", "/v1/admin/organizations/second", { token: svc.adminToken })).statusCode,
    ).toBe(200);
    expect(follower.output()).toContain("became leader");
  });

  it("a gracefully stopped leader releases the Lease for a new replica at once", async () => {
    const current = (await lease())!;
    const leader = current.spec.holderIdentity === "replica-a" ? a : b;
    const replacement = await spawnOperator(env, {
      serviceUrl: svc.url,
      adminTokenFile: await tokenFile(env, svc),
      identity: "replica-c",
    });
    try {
      await leader.terminate();
      expect(leader.output()).toContain("released leadership");
      const l = await waitFor("replica-c holds the Lease", async () => {
        const x = await lease();
        return x?.spec.holderIdentity === "replica-c" ? x : undefined;
      });
      expect(l.spec.leaseTransitions).toBe((current.spec.leaseTransitions ?? 0) + 1);
      await env.apply(organization("third"));
      await waitReady(env, "organization", "third");
    } finally {
      await replacement.kill();
    }
  });
});
