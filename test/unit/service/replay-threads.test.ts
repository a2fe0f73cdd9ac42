/**
 * How many replay worker threads a service starts (src/service/replay/workers.ts): the
 * container's CPU limit read from its cgroup, in both cgroup versions' formats.
 */
import { describe, expect, it } from "vitest";
import { cgroupCpuLimit, REPLAY_THREADS } from "../../../src/service/replay/workers.js";

describe("cgroupCpuLimit", () => {
  it("reads cgroup v2 cpu.max and v1 quota/period, rounding up", () => {
    expect(cgroupCpuLimit("100000 100000\n")).toBe(1);
    expect(cgroupCpuLimit("150000 100000")).toBe(2);
    expect(cgroupCpuLimit("50000 100000")).toBe(1);
    expect(cgroupCpuLimit("400000 100000")).toBe(4);
    // v1 files joined: cpu.cfs_quota_us then cpu.cfs_period_us, each with its newline.
    expect(cgroupCpuLimit("150000\n 100000\n")).toBe(2);
  });

  it("is null without a limit or for text it does not know", () => {
    expect(cgroupCpuLimit("max 100000\n")).toBeNull();
    expect(cgroupCpuLimit("-1\n 100000\n")).toBeNull();
    expect(cgroupCpuLimit("100000 0")).toBeNull();
    expect(cgroupCpuLimit("")).toBeNull();
    expect(cgroupCpuLimit("lots 100000")).toBeNull();
  });

  it("starts between 1 and 4 threads", () => {
    expect(REPLAY_THREADS).toBeGreaterThanOrEqual(1);
    expect(REPLAY_THREADS).toBeLessThanOrEqual(4);
  });
});
