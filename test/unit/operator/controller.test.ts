/**
 * The controller loop (operator/controllers/runtime/controller.ts) acts on a reconciler's Result
 * as controller-runtime does, and hands each reconcile a logger bound to its request.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { Controller } from "../../../operator/controllers/runtime/controller.js";
import type {
  Context,
  Reconciler,
  Request,
  Result,
} from "../../../operator/controllers/runtime/reconcile.js";
import { type Timers, WorkQueue } from "../../../operator/controllers/runtime/workqueue.js";
import { createOperatorLogger } from "../../../operator/log.js";
import { createOperatorMetrics } from "../../../operator/metrics.js";

const WIDGET: Request = { kind: "Widget", namespace: "team-a", name: "w1" };

/** A reconciler of one object that answers the given results in turn (then `{}`) or throws. */
class ScriptedReconciler implements Reconciler {
  readonly kind = WIDGET.kind;
  readonly calls: Array<{ bindings: Record<string, unknown>; req: Request }> = [];

  constructor(private readonly script: Array<Result | Error>) {}

  requests(): Request[] {
    return [WIDGET];
  }

  async reconcile(ctx: Context, req: Request): Promise<Result> {
    this.calls.push({ bindings: ctx.log.bindings(), req });
    const next = this.script.shift() ?? {};
    if (next instanceof Error) throw next;
    return next;
  }
}

/** Runs a controller over `reconciler` until it was called `calls` times; returns the delays (ms). */
async function run(reconciler: ScriptedReconciler, calls: number) {
  const delays: number[] = [];
  // Records each delay and fires at once, so the test waits for no backoff.
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      delays.push(ms);
      return setTimeout(fn, 0);
    },
    clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  };
  const metrics = createOperatorMetrics({ defaultMetrics: false });
  const controller = new Controller({
    queue: new WorkQueue({ baseDelayMs: 250, timers }),
    reconcilers: [reconciler],
    workers: 2,
    resyncMs: 0,
    metrics,
    log: createOperatorLogger({ level: "silent" }),
  });
  stops.push(() => controller.stop());
  controller.start();
  controller.resync();
  await vi.waitFor(() => expect(reconciler.calls.length).toBe(calls));
  await controller.stop();
  const counts = Object.fromEntries(
    (await metrics.reconciles.get()).values.map((v) => [String(v.labels.result), v.value]),
  );
  return { delays, counts };
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe("Controller", () => {
  it("passes a logger bound to the request's kind, namespace and name", async () => {
    const r = new ScriptedReconciler([]);
    await run(r, 1);
    expect(r.calls[0]!.req).toEqual(WIDGET);
    expect(r.calls[0]!.bindings).toMatchObject({ kind: "Widget", namespace: "team-a", name: "w1" });
  });

  it("requeueAfter is in seconds: the key comes back after that delay", async () => {
    const r = new ScriptedReconciler([{ requeueAfter: 2 }]);
    const { delays, counts } = await run(r, 2);
    expect(delays).toEqual([2000]);
    expect(counts).toEqual({ requeue: 1, success: 1 });
  });

  it("requeue and a throw re-add the key with exponential backoff", async () => {
    const r = new ScriptedReconciler([{ requeue: true }, new Error("boom")]);
    const { delays, counts } = await run(r, 3);
    expect(delays).toEqual([250, 500]);
    expect(counts).toEqual({ requeue: 1, error: 1, success: 1 });
  });
});
