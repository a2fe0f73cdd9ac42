/**
 * Records core/v1 Events about objects (`kubectl describe` shows them). Events of cluster-scoped
 * objects go to the `default` namespace, as client-go's recorder does. Recording is best effort:
 * a failure is logged, never thrown. Events are sent one at a time, in order, from a bounded
 * buffer, and wait (up to {@link EVENT_MAX_DEFER_MS}) while the reconcilers are busy: a burst of
 * reconciles emits one Event each, and sending them at once competed with the reconciles' own
 * writes (the statuses users wait for) for the API server; now they follow the statuses.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { KubeJson } from "./clients.js";

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

/** Events waiting to be sent, at most; the oldest is dropped (and logged) beyond it. */
export const EVENT_BUFFER = 1000;
/** Longest an Event waits for the reconcilers to become idle (ms). */
export const EVENT_MAX_DEFER_MS = 5_000;
const DEFER_POLL_MS = 20;

/** Records Events as `component` (e.g. tollgate-operator). */
export class EventRecorder {
  private readonly pending: Array<{ send: () => Promise<void>; done: () => void; at: number }> = [];
  private draining = false;
  private stopped = false;
  private busy: () => boolean = () => false;

  constructor(
    private readonly api: KubeJson,
    private readonly component: string,
    private readonly host: string,
    private readonly log: Logger,
  ) {}

  /** Queues one Event; resolves once it was sent, failed or dropped (never rejects). */
  record(obj: InvolvedObject, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const now = new Date();
    return new Promise<void>((done) => {
      this.pending.push({ send: () => this.create(obj, type, reason, message, now), done, at: Date.now() });
      if (this.pending.length > EVENT_BUFFER) {
        this.pending.shift()!.done();
        this.log.warn({ reason, buffered: EVENT_BUFFER }, "event buffer full; oldest event dropped");
      }
      void this.drain();
    });
  }

  /** Defers sending while `busy()` is true (e.g. the work queue has keys); undefined sends at once. */
  deferWhile(busy: (() => boolean) | undefined): void {
    this.busy = busy ?? (() => false);
  }

  /** Drops queued Events; an Event being sent completes. Later `record` calls do nothing. */
  stop(): void {
    this.stopped = true;
    for (const p of this.pending.splice(0)) p.done();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (let next = this.pending[0]; next; next = this.pending[0]) {
        if (this.busy() && Date.now() - next.at < EVENT_MAX_DEFER_MS) {
          await new Promise((r) => setTimeout(r, DEFER_POLL_MS));
          continue;
        }
        this.pending.shift();
        await next.send();
        next.done();
      }
    } finally {
      this.draining = false;
    }
  }

  /** Creates one Event; logs (never throws) when the API call fails. */
  private async create(
    obj: InvolvedObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
    now: Date,
  ): Promise<void> {
    const namespace = obj.namespace || "default";
    try {
      await this.api.request("POST", `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
        metadata: { name: `${obj.name}.${randomBytes(8).toString("hex")}`, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.name,
          namespace: obj.namespace,
          uid: obj.uid,
          resourceVersion: obj.resourceVersion,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        firstTimestamp: now.toISOString(),
        lastTimestamp: now.toISOString(),
        count: 1,
        source: { component: this.component, host: this.host },
        reportingComponent: this.component,
        reportingInstance: this.host,
      });
    } catch (err) {
      this.log.warn(
        { err: (err as Error).message, reason, object: `${obj.kind}/${obj.namespace ?? ""}/${obj.name}` },
        "event not recorded",
      );
    }
  }
}
