/**
 * Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm): every replica tries
 * to acquire or renew the Lease each retry period; a Lease held by another replica may be taken
 * over once its record has not changed for the lease duration, measured on the local clock from
 * when this replica last saw it change (so replicas never compare clocks). Writes are replaces
 * at the read resourceVersion, so two candidates cannot both win. The leader that cannot renew
 * within the renew deadline steps down. On a graceful stop the leader releases the Lease
 * (empty holder) so a successor takes over at once.
 */
import type { Logger } from "pino";
import { type GroupObjects, isConflict, isNotFound } from "../kube/clients.js";
import { type DelayFn, realDelay } from "../kube/informer.js";

/** The spec of a Lease as stored (timestamps are RFC 3339 MicroTime strings). */
export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number;
}

/** A Lease object as plain JSON. */
export interface Lease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** What a candidate should do with the Lease it just read. */
export type LeaseAction = "acquire" | "renew" | "wait";

/**
 * Pure decision: `observedAtMs` is the local time at which this candidate last saw the record
 * change; `nowMs` the local time now. Returns acquire (free or expired), renew (ours) or wait.
 */
export function decideLease(
  spec: LeaseSpec | undefined,
  identity: string,
  observedAtMs: number,
  nowMs: number,
  leaseDurationMs: number,
): LeaseAction {
  const holder = spec?.holderIdentity;
  if (!holder) return "acquire";
  if (holder === identity) return "renew";
  return nowMs - observedAtMs >= leaseDurationMs ? "acquire" : "wait";
}

/** MicroTime (RFC 3339 with microseconds) as the API server stores it. */
export const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

/** The record a candidate writes when it acquires or renews. */
export function nextLeaseSpec(
  previous: LeaseSpec | undefined,
  identity: string,
  action: "acquire" | "renew",
  now: Date,
  leaseDurationSeconds: number,
): LeaseSpec {
  const t = microTime(now);
  const transitions = previous?.leaseTransitions ?? 0;
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: action === "renew" ? (previous?.acquireTime ?? t) : t,
    renewTime: t,
    // Like client-go: every change of holder (also after a release) counts as a transition.
    leaseTransitions: action === "acquire" && previous ? transitions + 1 : transitions,
  };
}

/** Options of {@link LeaderElector}. Durations in milliseconds. */
export interface LeaderElectorOptions {
  leases: GroupObjects<Lease>;
  namespace: string;
  name: string;
  identity: string;
  /** How long a silent Lease blocks other candidates (default 15 000). */
  leaseDurationMs?: number;
  /** How long the leader keeps leading without a successful renew (default 10 000). */
  renewDeadlineMs?: number;
  /** Interval between attempts (default 2 000). */
  retryPeriodMs?: number;
  onStartedLeading: () => void | Promise<void>;
  onStoppedLeading: () => void | Promise<void>;
  log: Logger;
  delay?: DelayFn;
}

/** Runs the election loop until stopped. */
export class LeaderElector {
  private stopped = false;
  private leading = false;
  private loop: Promise<void> | undefined;
  private observed: { key: string; atMs: number } | undefined;
  private lastRenewMs = 0;
  private wake: (() => void) | undefined;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;

  constructor(private readonly o: LeaderElectorOptions) {
    this.leaseDurationMs = o.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = o.retryPeriodMs ?? 2_000;
  }

  /** Whether this replica currently leads. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Starts the election loop. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops the loop; a leader steps down (onStoppedLeading) and releases the Lease. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    if (this.leading) {
      this.leading = false;
      await this.o.onStoppedLeading();
      await this.release();
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message, lease: this.o.name }, "lease update failed");
      }
      if (this.stopped) break;
      const now = Date.now();
      if (ok) {
        this.lastRenewMs = now;
        if (!this.leading) {
          this.leading = true;
          this.o.log.info({ identity: this.o.identity, lease: this.o.name }, "became leader");
          await this.o.onStartedLeading();
        }
      } else if (this.leading && now - this.lastRenewMs > this.renewDeadlineMs) {
        this.leading = false;
        this.o.log.warn({ identity: this.o.identity, lease: this.o.name }, "lost leadership");
        await this.o.onStoppedLeading();
      }
      await Promise.race([
        (this.o.delay ?? realDelay)(this.retryPeriodMs),
        new Promise<void>((r) => {
          this.wake = r;
        }),
      ]);
    }
  }

  /** One attempt; true when this replica holds the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { leases, namespace, name, identity } = this.o;
    const now = new Date();
    const seconds = Math.ceil(this.leaseDurationMs / 1000);
    let lease: Lease;
    try {
      lease = await leases.get(name, namespace);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await leases.create(
          {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name, namespace },
            spec: nextLeaseSpec(undefined, identity, "acquire", now, seconds),
          },
          namespace,
        );
        this.observed = undefined;
        return true;
      } catch (e) {
        if (isConflict(e)) return false;
        throw e;
      }
    }
    const recordKey = `${lease.spec?.holderIdentity ?? ""}|${lease.spec?.renewTime ?? ""}`;
    if (this.observed?.key !== recordKey) this.observed = { key: recordKey, atMs: now.getTime() };
    const action = decideLease(lease.spec, identity, this.observed.atMs, now.getTime(), this.leaseDurationMs);
    if (action === "wait") return false;
    const updated: Lease = { ...lease, spec: nextLeaseSpec(lease.spec, identity, action, now, seconds) };
    try {
      await leases.replace(name, updated, namespace);
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    try {
      const lease = await this.o.leases.get(this.o.name, this.o.namespace);
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      const now = microTime(new Date());
      await this.o.leases.replace(
        this.o.name,
        { ...lease, spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: now } },
        this.o.namespace,
      );
      this.o.log.info({ identity: this.o.identity, lease: this.o.name }, "released leadership");
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, "lease release failed");
    }
  }
}
