/**
 * Replay before enforce for GovernancePolicies (issue 28; docs/policy-cel.md "Replay a
 * GovernancePolicy before enforcing it"): the body the operator sends to
 * POST /v1/admin/organizations/{slug}/policies/replay for a spec with `replay`, and the summary
 * of the answer it writes into `status.replay` and the `Replayed` condition. Pure.
 */
import {
  DEFAULT_REPLAY_EVENTS,
  type ReplayRequest,
  type ReplayResponse,
} from "../../../src/contract/v1/replay.js";
import { type GovernancePolicySpec, type ReplayStatus, replayWindowMs } from "../../crds/governancepolicy.js";
import type { PolicyBody } from "../../governance/client.js";

/**
 * The replay request of `spec.replay`: the candidate is the mapped config; it replaces the
 * service's policy `name` when `exists` (the version being enforced), else it is added under
 * that name; the window ends at `now`. No sample: the status does not keep one.
 */
export function replayRequest(
  replay: NonNullable<GovernancePolicySpec["replay"]>,
  candidate: PolicyBody["config"],
  name: string,
  exists: boolean,
  now: Date,
): ReplayRequest {
  const to = now.getTime();
  return {
    candidate: candidate as ReplayRequest["candidate"],
    ...(exists ? { replace: name } : { name }),
    from: new Date(to - replayWindowMs(replay.window)).toISOString(),
    to: new Date(to).toISOString(),
    max_events: replay.maxEvents ?? DEFAULT_REPLAY_EVENTS,
    sample_size: 0,
  };
}

/** `status.replay` of the service's answer, for `generation`. */
export function replayStatus(answer: ReplayResponse, generation: number): ReplayStatus {
  return {
    observedGeneration: generation,
    from: answer.from,
    to: answer.to,
    eventsRead: answer.events_read,
    eventsReplayed: answer.events_replayed,
    chainsRead: answer.chains_read,
    changed: answer.changed,
    changes: answer.changes,
    durationMs: Math.round(answer.duration_ms * 10) / 10,
    truncated: answer.truncated,
    ...(answer.truncated_by && { truncatedBy: answer.truncated_by }),
  };
}

/**
 * Message of the `Replayed` condition, e.g. "Replayed 1180 events of 24h: 12 decisions change
 * (allow→require_approval 9, allow→deny 3)"; kinds by count, most first.
 */
export function replayMessage(status: ReplayStatus, window: string): string {
  const kinds = Object.entries(status.changes)
    .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  const changed =
    status.changed === 0
      ? "no decision changes"
      : `${status.changed} decision${status.changed === 1 ? "" : "s"} change (${kinds})`;
  const truncated = status.truncated
    ? `; stopped at ${status.truncatedBy ?? "a bound"}, later events were not replayed`
    : "";
  return `Replayed ${status.eventsReplayed} events of ${window}: ${changed}${truncated}`;
}
