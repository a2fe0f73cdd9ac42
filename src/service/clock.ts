/**
 * Time source for everything that depends on "now" (approval deadlines, escalation, exception
 * expiry, receipt timestamps). Injected so tests control time; the database clock is never used
 * for business times.
 */
export interface Clock {
  /** Current time in epoch milliseconds. */
  nowMs(): number;
}

/** The wall clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 0, 15, 12, 0, 0)) {}
  nowMs(): number {
    return this.ms;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
}

/** ISO 8601 UTC string of an epoch-milliseconds time. */
export const iso = (ms: number): string => new Date(ms).toISOString();
