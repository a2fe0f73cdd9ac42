import { describe, expect, it } from "vitest";
import { decideLease, microTime, nextLeaseSpec } from "../../../operator/leader/lease.js";

const now = new Date("2024-05-01T10:00:00.250Z");

describe("decideLease", () => {
  it.each([
    ["no record", undefined, 0, "acquire"],
    ["a released lease (empty holder)", { holderIdentity: null }, now.getTime(), "acquire"],
    ["our own lease", { holderIdentity: "me", renewTime: "x" }, now.getTime(), "renew"],
    ["someone else's fresh lease", { holderIdentity: "other" }, now.getTime() - 3_999, "wait"],
    [
      "someone else's lease unchanged for the lease duration",
      { holderIdentity: "other" },
      now.getTime() - 4_000,
      "acquire",
    ],
  ] as const)("%s → %s", (_what, spec, observedAt, expected) => {
    expect(decideLease(spec, "me", observedAt, now.getTime(), 4_000)).toBe(expected);
  });
});

describe("nextLeaseSpec", () => {
  it("writes MicroTime timestamps the API server accepts", () => {
    expect(microTime(now)).toBe("2024-05-01T10:00:00.250000Z");
  });

  it("renewing keeps acquireTime and the transition count", () => {
    const prev = { holderIdentity: "me", acquireTime: "2024-05-01T09:00:00.000000Z", leaseTransitions: 3 };
    expect(nextLeaseSpec(prev, "me", "renew", now, 15)).toEqual({
      holderIdentity: "me",
      leaseDurationSeconds: 15,
      acquireTime: "2024-05-01T09:00:00.000000Z",
      renewTime: "2024-05-01T10:00:00.250000Z",
      leaseTransitions: 3,
    });
  });

  it("acquiring from another holder, or after a release, counts a transition; creating does not", () => {
    expect(
      nextLeaseSpec({ holderIdentity: "other", leaseTransitions: 3 }, "me", "acquire", now, 15),
    ).toMatchObject({
      holderIdentity: "me",
      acquireTime: "2024-05-01T10:00:00.250000Z",
      leaseTransitions: 4,
    });
    expect(
      nextLeaseSpec({ holderIdentity: null, leaseTransitions: 4 }, "me", "acquire", now, 15).leaseTransitions,
    ).toBe(5);
    expect(nextLeaseSpec(undefined, "me", "acquire", now, 15).leaseTransitions).toBe(0);
  });
});
