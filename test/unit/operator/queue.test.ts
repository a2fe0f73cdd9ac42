import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keyOf, parseKey } from "../../../operator/controllers/runtime/reconcile.js";
import { WorkQueue } from "../../../operator/controllers/runtime/workqueue.js";

describe("WorkQueue", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("hands keys out FIFO and deduplicates waiting keys", async () => {
    const q = new WorkQueue();
    q.add("a");
    q.add("b");
    q.add("a");
    expect(q.length).toBe(2);
    expect(await q.get()).toBe("a");
    expect(await q.get()).toBe("b");
    expect(q.length).toBe(0);
  });

  it("never gives a key to two workers; a re-add during processing comes back after done", async () => {
    const q = new WorkQueue();
    q.add("a");
    const k = await q.get();
    q.add("a");
    q.add("a");
    expect(q.length).toBe(0);
    let second: string | undefined;
    void q.get().then((v) => {
      second = v;
    });
    await Promise.resolve();
    expect(second).toBeUndefined();
    q.done(k!);
    await Promise.resolve();
    expect(second).toBe("a");
  });

  it("wakes a waiting worker on add", async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.add("x");
    expect(await p).toBe("x");
  });

  it("backs off exponentially per key up to the maximum, and forget resets", async () => {
    const q = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6].map(() => q.addRateLimited("k"))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(q.failureCount("k")).toBe(6);
    q.forget("k");
    expect(q.backoffDelay("k")).toBe(100);
  });

  it("adds a rate-limited key only after its delay", async () => {
    const q = new WorkQueue({ baseDelayMs: 100 });
    q.addRateLimited("k");
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(99);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
  });

  it("keeps the earlier of two delayed adds of one key", () => {
    const q = new WorkQueue();
    q.addAfter("k", 1000);
    q.addAfter("k", 200);
    q.addAfter("k", 5000);
    vi.advanceTimersByTime(200);
    expect(q.length).toBe(1);
    void q.get();
    vi.advanceTimersByTime(10_000);
    expect(q.length).toBe(0);
  });

  it("shutDown releases waiting workers and drops delayed keys", async () => {
    const q = new WorkQueue();
    const p = q.get();
    q.addAfter("k", 100);
    q.shutDown();
    expect(await p).toBeUndefined();
    vi.advanceTimersByTime(1000);
    q.add("z");
    expect(q.length).toBe(0);
    expect(await q.get()).toBeUndefined();
  });
});

describe("queue keys", () => {
  it("round-trips kind/namespace/name, with an empty namespace for cluster-scoped kinds", () => {
    expect(keyOf({ kind: "Organization", namespace: "", name: "acme" })).toBe("Organization//acme");
    expect(parseKey("GovernancePolicy/team-a/payments")).toEqual({
      kind: "GovernancePolicy",
      namespace: "team-a",
      name: "payments",
    });
    expect(() => parseKey("nope")).toThrow(/malformed/);
  });
});
