/**
 * Blocking on an approval gate (spec: "States and transitions" pending_approval rows,
 * "Limits" → approval polling). Polls GET /v1/chains/{id}/approval-status every
 * pollIntervalMs (5000 ms: constant, no backoff, no tiering). A transient error (backend
 * unreachable, per-request timeout, any 5xx, 408/429, another transport failure) is ignored and retried on the next tick. The
 * local wait window is defaultApprovalTimeoutHours from the start of the wait.
 *
 * Long-poll (internals.longPoll, the default; beyond the spec): each poll asks the service to
 * hold it for the interval (`?wait=`, at most 5 s) and the next poll starts when the previous
 * one ends, but never sooner than one interval after it started — one request per interval,
 * as the spec's poll, while a decision reaches the caller as soon as it is made. Without
 * long-poll the loop sleeps the interval before each poll.
 *
 * Tracing: the wait is one span, `tollgate.approval.wait` (OpenTelemetry API; a no-op unless the
 * application registered an SDK), with the chain and approval ids and the result (approved,
 * denied, timed_out, aborted, error); each poll is a request span below it (http.ts).
 */
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { MAX_APPROVAL_WAIT_MS, type ServiceClient } from "./client.js";
import type { ChainConfig } from "./config.js";
import { type PolicyDecision, recordedDecision } from "./decision.js";
import { ActionDeniedError, ChainTimeoutError } from "./exceptions.js";
import { isTransient } from "./http.js";
import { abortReason, throwIfAborted } from "./sleep.js";

/** The gate being waited on. */
export interface PendingApproval {
  chainId: string;
  approvalId: string;
  eventId: string;
  sequence: number | null;
  category: string | null;
}

/**
 * Waits until the approval is resolved and returns the resumed decision (allow,
 * decision_source human_approval).
 * @throws ActionDeniedError when a reviewer denied (decisionSource human_approval, condition =
 *   notes), the backend timed the approval out (condition contains "not resolved within") or
 *   the chain was completed while it waited (cancelled);
 *   ChainTimeoutError when the local wait window expires first;
 *   ServiceApiError for a permanent API error (e.g. 404);
 *   the signal's reason when `signal` aborts.
 */
export function waitForApproval(
  client: ServiceClient,
  config: ChainConfig,
  gate: PendingApproval,
  signal?: AbortSignal,
): Promise<PolicyDecision> {
  return waitTracer.startActiveSpan(
    "tollgate.approval.wait",
    { attributes: { "tollgate.chain.id": gate.chainId, "tollgate.approval.id": gate.approvalId } },
    async (span) => {
      try {
        const decision = await pollApproval(client, config, gate, signal);
        span.setAttribute("tollgate.approval.result", "approved");
        return decision;
      } catch (err) {
        const result =
          err instanceof ActionDeniedError
            ? "denied"
            : err instanceof ChainTimeoutError
              ? "timed_out"
              : signal?.aborted
                ? "aborted"
                : "error";
        span.setAttribute("tollgate.approval.result", result);
        if (result === "error") {
          span.setAttribute("error.type", err instanceof Error ? err.name : "Error");
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

const waitTracer = trace.getTracer("tollgate-sdk");

/** The polling loop of waitForApproval. */
async function pollApproval(
  client: ServiceClient,
  config: ChainConfig,
  gate: PendingApproval,
  signal?: AbortSignal,
): Promise<PolicyDecision> {
  const { pollIntervalMs, sleep, now, longPoll } = config.internals;
  const deadline = now() + config.defaultApprovalTimeoutHours * 3_600_000;
  const expired = () =>
    new ChainTimeoutError(gate.chainId, gate.approvalId, config.defaultApprovalTimeoutHours);
  const waitMs = longPoll ? Math.min(pollIntervalMs, MAX_APPROVAL_WAIT_MS) : 0;
  let started = Number.NEGATIVE_INFINITY;
  for (;;) {
    throwIfAborted(signal);
    // Keeps one poll per interval when a poll ended early (error, restart, a service without `wait`).
    const pause = longPoll ? started + pollIntervalMs - now() : pollIntervalMs;
    if (pause > 0) {
      await sleep(pause, signal);
      throwIfAborted(signal);
    }
    started = now();
    let status: Awaited<ReturnType<ServiceClient["approvalStatus"]>>;
    try {
      status = await client.approvalStatus(gate.chainId, gate.approvalId, { signal, waitMs });
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      if (!isTransient(err)) throw err;
      if (now() >= deadline) throw expired();
      continue;
    }
    const approval = status.approval;
    if (approval && approval.status !== "pending") {
      const decision = recordedDecision(approval.decision, {
        chain_id: gate.chainId,
        event_id: gate.eventId,
        sequence: gate.sequence,
        category: gate.category,
        approval_id: gate.approvalId,
        approval_expires_at: approval.expires_at ?? null,
        exception_id: approval.exception?.exception_id ?? null,
      });
      if (approval.status === "approved") return decision;
      const condition = approval.condition ?? decision.decision_reason;
      throw new ActionDeniedError(decision.decision_source, condition, decision.policy_name, decision);
    }
    if (now() >= deadline) throw expired();
  }
}
