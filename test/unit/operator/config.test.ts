import { describe, expect, it } from "vitest";
import { loadOperatorConfig, OperatorConfigError } from "../../../operator/config.js";
import { nextStatus } from "../../../operator/controller/conditions.js";
import { AppliedGenerations, classifyFailure, formatIssues } from "../../../operator/controller/resource.js";
import {
  FINALIZER,
  GovernancePolicySpecSchema,
  type TollgateResource,
} from "../../../operator/crds/schema.js";
import { INFORMER_BACKOFF, nextBackoff } from "../../../operator/kube/informer.js";
import { ServiceError } from "../../../operator/service/client.js";

const base = {
  TOLLGATE_SERVICE_URL: "http://tollgate:8000",
  TOLLGATE_ADMIN_TOKEN_FILE: "/var/run/secrets/token",
};

describe("loadOperatorConfig", () => {
  it("applies defaults", () => {
    const c = loadOperatorConfig({ ...base, TOLLGATE_OPERATOR_NAMESPACE: "tg", POD_NAME: "op-0" });
    expect(c).toMatchObject({
      serviceUrl: "http://tollgate:8000",
      namespace: "tg",
      identity: "op-0",
      lease: { name: "tollgate-operator", durationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
      webhook: {
        port: 9443,
        configurationName: "tollgate-sidecar-injector",
        certMode: "self-signed",
        extraSans: [],
      },
      sidecar: { serviceUrl: "http://tollgate:8000", mode: "container" },
      resyncMs: 300_000,
      workers: 4,
    });
    expect(c.sidecar.image).toMatch(/^ghcr\.io\/tollgate\/sidecar:/);
  });

  it("names every invalid variable", () => {
    try {
      loadOperatorConfig({ TOLLGATE_SERVICE_URL: "not a url", TOLLGATE_WEBHOOK_PORT: "99999" });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(OperatorConfigError);
      const msg = (err as Error).message;
      expect(msg).toContain("TOLLGATE_SERVICE_URL");
      expect(msg).toContain("TOLLGATE_ADMIN_TOKEN_FILE");
      expect(msg).toContain("TOLLGATE_WEBHOOK_PORT");
    }
  });

  it("requires the renew deadline to be shorter than the lease", () => {
    expect(() =>
      loadOperatorConfig({
        ...base,
        TOLLGATE_LEASE_DURATION_SECONDS: "5",
        TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: "5",
      }),
    ).toThrow(/RENEW_DEADLINE/);
  });
});

describe("reconcile helpers", () => {
  it("formats zod issues with Kubernetes-style field paths", () => {
    const r = GovernancePolicySpecSchema.safeParse({
      organizationRef: { name: "a" },
      customRules: [{ name: "r", match: { payload: { n: { between: 1 } } }, outcome: "allow" }],
    });
    expect(formatIssues(r.error!)).toMatch(/^spec\.customRules\[0\]\.match\.payload\.n: /);
  });

  it.each([
    [new ServiceError(400, "TG_ERR_VALIDATION", "bad"), "ServiceRejected"],
    [new ServiceError(404, "TG_ERR_NOT_FOUND", "Organization not found"), "OrganizationNotFound"],
    [new ServiceError(503, "TG_ERR_INTERNAL", "down"), "ServiceUnavailable"],
    [new ServiceError(0, "UNREACHABLE", "ECONNREFUSED"), "ServiceUnavailable"],
  ])("classifies %s", (err, reason) => {
    expect(classifyFailure(err).reason).toBe(reason);
  });

  it("rethrows errors that are not the service's", () => {
    expect(() => classifyFailure(new Error("kube"))).toThrow("kube");
  });

  it("informer reconnect backoff doubles from 1 s to 30 s", () => {
    const seq = [INFORMER_BACKOFF.initialMs as number];
    while (seq.length < 7) seq.push(nextBackoff(seq.at(-1)!));
    expect(seq).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it("AppliedGenerations skips events about a generation this replica already applied", () => {
    const applied = new AppliedGenerations();
    const obj = (
      generation: number,
      extra: Partial<TollgateResource["metadata"]> = {},
    ): TollgateResource => ({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "GovernancePolicy",
      metadata: { name: "p", namespace: "n", generation, finalizers: [FINALIZER], ...extra },
      spec: {},
    });
    const key = "GovernancePolicy/n/p";
    expect(applied.wants(key, obj(1))).toBe(true);
    applied.set(key, 1);
    // The finalizer update arrives before the status write: nothing new to do.
    expect(applied.wants(key, obj(1))).toBe(false);
    expect(applied.wants(key, obj(2))).toBe(true);
    expect(applied.wants(key, obj(1, { deletionTimestamp: "2024-01-01T00:00:00Z" }))).toBe(true);
    const synced = {
      ...obj(3),
      status: nextStatus(undefined, 3, { kind: "synced", message: "ok" }, new Date()),
    };
    expect(applied.wants(key, synced)).toBe(false);
    applied.delete(key);
    expect(applied.wants(key, obj(1))).toBe(true);
  });
});
