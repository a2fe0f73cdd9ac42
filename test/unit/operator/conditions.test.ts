import { describe, expect, it } from "vitest";
import {
  eventFor,
  needsReconcile,
  nextStatus,
  Reason,
  statusChanged,
} from "../../../operator/controllers/runtime/conditions.js";
import { FINALIZER, type ResourceStatus, type TollgateResource } from "../../../operator/crds/schema.js";

const t0 = new Date("2024-05-01T10:00:00.123Z");
const t1 = new Date("2024-05-01T11:00:00.000Z");
const synced = { kind: "synced" as const, message: "applied (version v1)", fields: { serviceVersion: "v1" } };
const byType = (s: ResourceStatus, type: string) => s.conditions!.find((c) => c.type === type)!;

describe("nextStatus", () => {
  it("a first successful sync: Ready and Synced True at the generation", () => {
    const s = nextStatus(undefined, 3, synced, t0);
    expect(s.observedGeneration).toBe(3);
    expect(s.serviceVersion).toBe("v1");
    expect(byType(s, "Ready")).toEqual({
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: "applied (version v1)",
      lastTransitionTime: "2024-05-01T10:00:00Z",
      observedGeneration: 3,
    });
    expect(byType(s, "Synced")).toMatchObject({ status: "True", reason: "Synced", observedGeneration: 3 });
  });

  it("keeps lastTransitionTime while the status stays, moves it on a change", () => {
    const a = nextStatus(undefined, 1, synced, t0);
    const b = nextStatus(a, 2, { ...synced, fields: { serviceVersion: "v2" } }, t1);
    expect(byType(b, "Synced").lastTransitionTime).toBe("2024-05-01T10:00:00Z");
    expect(byType(b, "Synced").observedGeneration).toBe(2);
    const c = nextStatus(b, 2, { kind: "failed", reason: Reason.ServiceUnavailable, message: "down" }, t1);
    expect(byType(c, "Synced")).toMatchObject({
      status: "False",
      reason: "ServiceUnavailable",
      lastTransitionTime: "2024-05-01T11:00:00Z",
    });
    expect(byType(c, "Ready").status).toBe("False");
    expect(c.serviceVersion).toBe("v2");
  });

  it("synced but not in effect: Ready False with the blocking reason", () => {
    const s = nextStatus(
      undefined,
      1,
      { ...synced, notReady: { reason: Reason.KillSwitchActive, message: "Kill switch active: incident" } },
      t0,
    );
    expect(byType(s, "Synced").status).toBe("True");
    expect(byType(s, "Ready")).toMatchObject({ status: "False", reason: "KillSwitchActive" });
  });
});

describe("statusChanged", () => {
  it("is false for an equal status in another key order, true otherwise", () => {
    const a = nextStatus(undefined, 1, synced, t0);
    const reordered = JSON.parse(
      JSON.stringify({ conditions: a.conditions, serviceVersion: "v1", observedGeneration: 1 }),
    );
    expect(statusChanged(a, reordered)).toBe(false);
    expect(statusChanged(a, nextStatus(a, 1, synced, t1))).toBe(false);
    expect(statusChanged(a, nextStatus(a, 2, synced, t1))).toBe(true);
    expect(statusChanged(undefined, a)).toBe(true);
  });
});

describe("eventFor", () => {
  const failed = (message: string) => ({ kind: "failed" as const, reason: Reason.ServiceRejected, message });
  it.each([
    ["first success", undefined, nextStatus(undefined, 1, synced, t0), { type: "Normal", reason: "Synced" }],
    ["steady success", nextStatus(undefined, 1, synced, t0), nextStatus(undefined, 1, synced, t1), null],
    [
      "a new failure",
      nextStatus(undefined, 1, synced, t0),
      nextStatus(undefined, 1, failed("bad"), t1),
      { type: "Warning", reason: "ServiceRejected", message: "bad" },
    ],
    [
      "the same failure again",
      nextStatus(undefined, 1, failed("bad"), t0),
      nextStatus(undefined, 1, failed("bad"), t1),
      null,
    ],
    [
      "a different failure",
      nextStatus(undefined, 1, failed("bad"), t0),
      nextStatus(undefined, 1, failed("worse"), t1),
      { type: "Warning", message: "worse" },
    ],
    [
      "recovery",
      nextStatus(undefined, 1, failed("bad"), t0),
      nextStatus(undefined, 1, synced, t1),
      { type: "Normal", reason: "Synced" },
    ],
  ])("%s", (_what, before, after, expected) => {
    const e = eventFor(before, after);
    if (expected === null) expect(e).toBeNull();
    else expect(e).toMatchObject(expected);
  });
});

describe("needsReconcile", () => {
  const obj = (over: Partial<TollgateResource["metadata"]>, status?: ResourceStatus): TollgateResource => ({
    apiVersion: "tollgate.dev/v1alpha1",
    kind: "Organization",
    metadata: { name: "a", generation: 2, finalizers: [FINALIZER], ...over },
    spec: {},
    status,
  });
  const done = nextStatus(undefined, 2, synced, t0);
  it.each([
    ["synced at the current generation", obj({}, done), false],
    ["never reconciled", obj({}), true],
    ["without the finalizer", obj({ finalizers: [] }, done), true],
    ["a newer generation", obj({ generation: 3 }, done), true],
    ["being deleted", obj({ deletionTimestamp: "2024-01-01T00:00:00Z" }, done), true],
    [
      "failed to sync",
      obj({}, nextStatus(undefined, 2, { kind: "failed", reason: Reason.InvalidSpec, message: "x" }, t0)),
      true,
    ],
  ])("%s → %s", (_what, o, expected) => {
    expect(needsReconcile(o)).toBe(expected);
  });
});
