import type { HoldEnd } from "../../src/service/approvals/waiters.js";
import { sample } from "./promtool.js";

/** GET approval-status over real HTTP; resolves with the status code and JSON body. */
export async function poll(base: string, key: string, chainId: string, query: string) {
  const r = await fetch(`${base}/v1/chains/${chainId}/approval-status${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: r.status, body: await r.json() };
}

const ENDS: HoldEnd[] = ["first_read", "woken", "elapsed", "shutdown"];

/** Held approval-status requests by how they ended (`tollgate_approval_status_holds_total`) in an exposition. */
export function holdEnds(exposition: string): Record<HoldEnd, number> {
  const n = (e: HoldEnd) => sample(exposition, `tollgate_approval_status_holds_total{ended="${e}"}`) ?? 0;
  return Object.fromEntries(ENDS.map((e) => [e, n(e)])) as Record<HoldEnd, number>;
}

/**
 * Runs `fn` and returns its value with how the holds that ended meanwhile ended, only the
 * non-zero counts (`{ woken: 1 }`); `exposition` reads the service's metrics.
 */
export async function holdsEndedDuring<T>(
  exposition: () => Promise<string>,
  fn: () => Promise<T>,
): Promise<{ value: T; ended: Partial<Record<HoldEnd, number>> }> {
  const before = holdEnds(await exposition());
  const value = await fn();
  const after = holdEnds(await exposition());
  const ended = Object.fromEntries(ENDS.map((e) => [e, after[e] - before[e]]).filter(([, d]) => d !== 0));
  return { value, ended };
}
