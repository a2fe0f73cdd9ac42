/** bench/lib/wal-watch.ts: reading WAL flush stalls out of psql's samples. */
import { describe, expect, it } from "vitest";
import { parseSamples, stallsOf, type WalSample } from "../../bench/lib/wal-watch.js";

/**
 * Samples every 5 ms from a script of flush positions: a number n > 0 is n samples with the
 * flush moving each time (load), a number -n is n more samples with it standing still. WAL is
 * inserted `ahead` bytes beyond the flush.
 */
function samples(script: number[], ahead = 100): WalSample[] {
  const flushed: number[] = [];
  let at = 0;
  for (const n of script) {
    for (let i = 0; i < Math.abs(n); i++) flushed.push(n > 0 ? ++at : at);
  }
  return flushed.map((f, i) => ({ atMs: i * 5, inserted: f + ahead, flushed: f }));
}

describe("stallsOf", () => {
  it("measures how long the flush stood still under load while WAL waited", () => {
    // 6 moving samples, the flush still for 8 more (40 ms), then moving again.
    const s = stallsOf(samples([6, -8, 6]), 25);
    expect(s.longestMs).toBe(40);
    expect(s.watchedMs).toBe(95);
    expect(s.shareBeyond).toBeCloseTo(15 / 95, 9);
    expect(s.samples).toBe(20);
  });

  it("sums the time beyond the threshold over every stall", () => {
    // stalls of 40, 10 and 50 ms: 15 + 0 + 25 ms beyond 25 ms
    const s = stallsOf(samples([5, -8, 5, -2, 5, -10, 5]), 25);
    expect(s.longestMs).toBe(50);
    expect(s.shareBeyond).toBeCloseTo(40 / s.watchedMs, 9);
  });

  it("does not count an idle server, where nothing waits to be flushed", () => {
    expect(stallsOf(samples([6, -20, 6], 0), 25)).toMatchObject({ longestMs: 0, shareBeyond: 0 });
  });

  it("does not count a still flush at the edges of the load, before it starts or after it ends", () => {
    // WAL waiting for the WAL writer while no one commits: still, then one move, then load.
    expect(stallsOf(samples([1, -30, 1, -2, 8]), 25).longestMs).toBe(0);
    // Load, then the same after it: the flush moves once more and stands still again.
    expect(stallsOf(samples([8, -30, 1, -10]), 25).longestMs).toBe(0);
    // A stall that runs into the end of the watch.
    expect(stallsOf(samples([8, -30]), 25).longestMs).toBe(0);
  });

  it("counts a still stretch once WAL is inserted beyond it in any of its samples", () => {
    const s = samples([6, -7, 6], 0);
    s[9]!.inserted += 50;
    expect(stallsOf(s, 25).longestMs).toBe(35);
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

describe("parseSamples", () => {
  it("reads psql's lines as samples timed from the first, dropping a line cut short", () => {
    const text = "1795352954723.047 22022100 22022088\n1795352954727.019 22022200 22022100\n17953529547";
    expect(parseSamples(text)).toEqual([
      { atMs: 0, inserted: 22022100, flushed: 22022088 },
      { atMs: expect.closeTo(3.972, 3), inserted: 22022200, flushed: 22022100 },
    ]);
    expect(parseSamples("")).toEqual([]);
  });
});
