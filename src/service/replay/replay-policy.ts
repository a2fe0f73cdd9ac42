/**
 * Runs a replay (issue 28, "Replay before enforce"; replay.ts says what it decides and from
 * which facts): validates the candidate against the organization's policies, reads the window's
 * pages in one READ ONLY transaction (store.ts) and has the replay worker threads decide them
 * (workers.ts), then merges their tallies in page order.
 */
import {
  DEFAULT_CANDIDATE_NAME,
  REPLAY_TIME_LIMIT_MS,
  type ReplayRequest,
} from "../../contract/v1/replay.js";
import type { PolicyConfig } from "../../policy/schema.js";
import type { Database } from "../db/pool.js";
import { ApiError, badRequest } from "../errors.js";
import { effectiveOrgConfig, listPolicies, orgById } from "../orgs/orgs.js";
import { mergeTallies, type ReplayAnswer, type ReplayerOptions, type ReplayTally } from "./replay.js";
import { beginReplayReads, exceptionsInForce, type ReplayPage, replayPage } from "./store.js";
import { type ReplayWorkers, replayWorkers } from "./workers.js";

/**
 * Chains read per page (one query: the chains and their events, bounded by the remaining
 * max_events). Pages are decided in parallel, so a replay has several: at 40 events per chain
 * a page is 10,000 events (a few MB of JSON), and the worker threads get work from the first
 * pages on. A page is held in memory until it is decided.
 */
export const CHAIN_PAGE = 250;

/** Pages read but not yet decided, per worker thread, before the next read waits (bounds memory). */
const PAGES_AHEAD_PER_THREAD = 2;

const FIRST_CHAIN_ID = "00000000-0000-0000-0000-000000000000";

/**
 * Replays `body.candidate` over the organization's events recorded in [from, to) (see the module
 * comment). Reads at most `max_events` events (rows of the window's chains, in chain id and
 * sequence order) and stops reading after REPLAY_TIME_LIMIT_MS; past either it answers
 * `truncated` with what it read (the pages already read are decided). This thread reads the
 * pages, each while the one before is decided; the replay worker threads decide them
 * (workers.ts).
 * @throws ApiError 400 TG_ERR_VALIDATION `body.replace` naming no policy of the organization,
 *   `body.name` naming one that exists, `body.candidate` when the combined configuration is
 *   invalid; 404 when the organization does not exist. Error "replay worker: …" (a 500) when a
 *   worker fails.
 */
export async function replayPolicy(
  db: Database,
  opts: {
    orgId: string;
    body: ReplayRequest;
    timeLimitMs?: number;
    /** Chains per page (default CHAIN_PAGE; the tests read smaller pages). */
    pageChains?: number;
    /** The worker threads (default: the process's pool, workers.ts replayWorkers). */
    workers?: ReplayWorkers;
  },
): Promise<ReplayAnswer> {
  const started = performance.now();
  const { body } = opts;
  const fromMs = Date.parse(body.from);
  const toMs = Date.parse(body.to);
  const from = new Date(fromMs);
  const to = new Date(toMs);
  const timeLimit = opts.timeLimitMs ?? REPLAY_TIME_LIMIT_MS;
  const pageChains = opts.pageChains ?? CHAIN_PAGE;
  const workers = opts.workers ?? replayWorkers();

  return db.tx(async (q) => {
    await beginReplayReads(q);
    const org = await orgById(q, opts.orgId);
    const policies = await listPolicies(q, opts.orgId);
    const name = body.replace ?? body.name ?? DEFAULT_CANDIDATE_NAME;
    const exists = policies.some((p) => p.name === name);
    if (body.replace !== undefined && !exists) {
      throw fieldError("body.replace", `the organization has no policy named "${body.replace}"`);
    }
    if (body.replace === undefined && exists) {
      throw fieldError("body.name", `a policy named "${name}" exists; give it as replace to replace it`);
    }
    let config: PolicyConfig;
    try {
      config = effectiveOrgConfig(org, [
        ...policies.filter((p) => p.name !== name),
        { name, config: body.candidate },
      ]);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw fieldError("body.candidate", `the combined configuration is invalid: ${(err as Error).message}`);
    }
    const options: ReplayerOptions = {
      config,
      orgEnvironment: org.environment,
      exceptions: await exceptionsInForce(q, { orgId: opts.orgId, from, to }),
      fromMs,
      toMs,
      sampleSize: body.sample_size,
    };

    let truncatedBy: ReplayAnswer["truncated_by"] = null;
    let eventsRead = 0;
    // Set when a page fails: reading more would be wasted, the replay fails anyway.
    let failed = false;
    const decided: Promise<ReplayTally>[] = [];
    const pending = new Set<Promise<unknown>>();
    const maxPending = PAGES_AHEAD_PER_THREAD * workers.size;
    const read = (afterId: string, budget: number) =>
      replayPage(q, { orgId: opts.orgId, from, to, afterId, chains: pageChains, limit: budget + 1 });
    // Read-ahead: the next page is asked for before this one is handed out; one more row than
    // the budget tells a cut from an exact fit.
    let next: Promise<ReplayPage> | null = read(FIRST_CHAIN_ID, body.max_events);
    try {
      while (next !== null) {
        const page: ReplayPage = await next;
        next = null;
        if (page.events === 0 || failed) break;
        const budget = body.max_events - eventsRead;
        const cut = page.events > budget;
        const keep = cut ? budget : page.events;
        eventsRead += keep;
        if (!cut) next = read(page.lastChainId!, budget - keep);
        const tally = workers.decide(options, page.json, keep);
        decided.push(tally);
        const settled: Promise<void> = tally.then(
          () => void pending.delete(settled),
          () => {
            failed = true;
            pending.delete(settled);
          },
        );
        pending.add(settled);
        if (cut) {
          truncatedBy = "max_events";
          break;
        }
        if (performance.now() - started > timeLimit) {
          truncatedBy = "time_limit";
          break;
        }
        while (pending.size >= maxPending) await Promise.race(pending);
      }
    } finally {
      // A read-ahead left when stopping early, or after a failure: let it finish before the
      // transaction ends; and every page handed out, so that none fails unobserved.
      await next?.catch(() => undefined);
      await Promise.allSettled(decided);
    }
    const tally = mergeTallies(await Promise.all(decided), body.sample_size);
    return {
      from: from.toISOString(),
      to: to.toISOString(),
      candidate_name: name,
      replaced: body.replace !== undefined,
      ...tally,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      truncated: truncatedBy !== null,
      truncated_by: truncatedBy,
    };
  });
}

/** A 400 naming the field, shaped as the input boundary's (details.issues[0].path). */
const fieldError = (path: string, message: string) =>
  badRequest(`${path}: ${message}`, { issues: [{ path, message }] });
