/** bench/lib/wal-watch.ts: reading WAL flush stalls out of samples. */
import { describe, expect, it } from "vitest";
import { stallsOf, type WalSample } from "../../bench/lib/wal-watch.js";

/** Samples every 5 ms: `flushed[i]` at i·5 ms, WAL inserted `ahead` bytes beyond it. */
const samples = (flushed: number[], ahead = 100): WalSample[] =>
  flushed.map((f, i) => ({ atMs: i * 5, inserted: f + ahead, flushed: f }));

describe("stallsOf", () => {
  it("measures the longest stretch the flush position stood still while WAL waited", () => {
    // 0..10 ms moving, then 40 ms still at 3, then moving again.
    const s = stallsOf(samples([1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5]), 25);
    expect(s.longestMs).toBe(40);
    expect(s.watchedMs).toBe(60);
    expect(s.shareBeyond).toBeCloseTo(15 / 60, 9);
    expect(s.samples).toBe(13);
  });

  it("sums the time beyond the threshold over every stall", () => {
    const still = (v: number, n: number) => Array<number>(n).fill(v);
    const s = stallsOf(samples([...still(1, 9), ...still(2, 3), ...still(3, 11), 4]), 25);
    // stalls of 40, 10 and 50 ms: 15 + 0 + 25 ms beyond 25 ms, over 115 ms watched
    expect(s.longestMs).toBe(50);
    expect(s.shareBeyond).toBeCloseTo(40 / 115, 9);
  });

  it("does not count an idle server, where nothing waits to be flushed", () => {
    const idle = samples([7, 7, 7, 7, 7, 7, 7, 7, 7, 7], 0);
    expect(stallsOf(idle, 25)).toMatchObject({ longestMs: 0, shareBeyond: 0, watchedMs: 45 });
  });

  it("counts a still stretch once WAL is inserted beyond it in any of its samples", () => {
    const s = samples([5, 5, 5, 5, 5, 5, 5, 6], 0);
    s[3]!.inserted = 9;
    expect(stallsOf(s, 25).longestMs).toBe(30);
  });

  it("has no stalls without samples", () => {
    expect(stallsOf([], 25)).toEqual({
      longestMs: 0,
      shareBeyond: 0,
      thresholdMs: 25,
      watchedMs: 0,
      samples: 0,
    });
  });
});
