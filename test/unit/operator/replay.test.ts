/** Replay before enforce: the window, the request the operator sends and the status it writes. */
import { describe, expect, it } from "vitest";
import {
  replayMessage,
  replayRequest,
  replayStatus,
} from "../../../operator/controllers/governancepolicy/replay.js";
import { GovernancePolicySpecSchema, replayWindowMs } from "../../../operator/crds/governancepolicy.js";

describe("GovernancePolicy spec.replay", () => {
  it("reads Go durations of hours, minutes and seconds, up to 744h", () => {
    expect(replayWindowMs("24h")).toBe(86_400_000);
    expect(replayWindowMs("1h30m")).toBe(5_400_000);
    expect(replayWindowMs("45s")).toBe(45_000);
    expect(replayWindowMs("1d")).toBeNaN();
    const parse = (window: string) =>
      GovernancePolicySpecSchema.safeParse({ organizationRef: { name: "acme" }, replay: { window } });
    expect(parse("744h").success).toBe(true);
    expect(parse("745h").success).toBe(false);
    expect(parse("0s").success).toBe(false);
    expect(parse("1d").success).toBe(false);
    expect(parse("24h").data?.replay?.enforce).toBe(false);
  });

  it("asks to replace the enforced policy or to add the candidate, over the window ending now", () => {
    const now = new Date("2026-11-27T12:00:00Z");
    const candidate = { custom_rules: [] };
    expect(replayRequest({ window: "2h", enforce: false }, candidate, "team-a.mail", false, now)).toEqual({
      candidate,
      name: "team-a.mail",
      from: "2026-11-27T10:00:00.000Z",
      to: "2026-11-27T12:00:00.000Z",
      max_events: 100_000,
      sample_size: 0,
    });
    expect(
      replayRequest({ window: "2h", maxEvents: 10, enforce: true }, candidate, "team-a.mail", true, now),
    ).toMatchObject({ replace: "team-a.mail", max_events: 10 });
  });

  it("summarizes the answer without its sample, most frequent change first", () => {
    const status = replayStatus(
      {
        from: "a",
        to: "b",
        candidate_name: "team-a.mail",
        replaced: false,
        events_read: 12,
        events_replayed: 10,
        chains_read: 3,
        changed: 4,
        changes: { "allow→deny": 1, "allow→require_approval": 3 },
        sample: [],
        duration_ms: 12.345,
        truncated: true,
        truncated_by: "max_events",
      },
      7,
    );
    expect(status).toEqual({
      observedGeneration: 7,
      from: "a",
      to: "b",
      eventsRead: 12,
      eventsReplayed: 10,
      chainsRead: 3,
      changed: 4,
      changes: { "allow→deny": 1, "allow→require_approval": 3 },
      durationMs: 12.3,
      truncated: true,
      truncatedBy: "max_events",
    });
    expect(replayMessage(status, "24h")).toBe(
      "Replayed 10 events of 24h: 4 decisions change (allow→require_approval 3, allow→deny 1); stopped at max_events, later events were not replayed",
    );
    expect(replayMessage({ ...status, changed: 0, changes: {}, truncated: false }, "1h")).toBe(
      "Replayed 10 events of 1h: no decision changes",
    );
  });
});
