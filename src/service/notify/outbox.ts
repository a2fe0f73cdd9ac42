/**
 * Delivery of the notification outbox (DESIGN.md "Storage and time"; spec: "Events" 3).
 * Rows are written in the same transaction as the approval (approvals/), so no mail
 * is lost on a crash. A worker claims due rows with FOR UPDATE SKIP LOCKED and leases them by
 * moving next_attempt_at past the send (attempts is the fencing token), renders, sends over
 * SMTP, and marks sent_at. Failures retry with exponential backoff (30 s doubling to 1 h). Two
 * workers never hold the same row; a worker that dies mid-send leaves the row to be retried
 * after the lease (at-least-once across crashes, exactly once otherwise).
 * Mail for an approval that was decided or expired before delivery is dropped, not sent.
 */
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { PollingLoop } from "../jobs.js";
import type { Logger } from "../logger.js";
import { ApprovalMailKind, loadApprovalMailData, renderApprovalMail } from "./mail.js";
import type { MailTransport } from "./smtp.js";

/** What a delivery run needs. `linkKey` is a secret. */
export interface OutboxDeps {
  db: Database;
  clock: Clock;
  transport: MailTransport;
  from: string;
  publicUrl: string;
  linkKey: Buffer;
  log?: Logger;
  /** Called once per row with its result (metrics). */
  onResult?: (result: DeliveryResult) => void;
}

/** Result of one row. */
export type DeliveryResult = "sent" | "failed" | "dropped";

/** Counts of one delivery run. */
export interface DeliveryRun {
  claimed: number;
  sent: number;
  failed: number;
  dropped: number;
}

/** Retry delay after the n-th failed attempt (n ≥ 1): 30 s doubling, at most 1 h. */
export const retryDelayMs = (attempts: number): number =>
  Math.min(3_600_000, 30_000 * 2 ** Math.max(0, attempts - 1));

/** Default lease of a claimed row; longer than any SMTP timeout so leases never overlap a send. */
export const DEFAULT_LEASE_MS = 5 * 60_000;

interface ClaimedRow {
  id: number;
  kind: string;
  recipient: string;
  payload: Record<string, unknown>;
  attempts: number;
}

/**
 * Claims up to `limit` due rows and delivers them one by one. Returns the counts.
 * Never throws for a single row's failure; database errors propagate.
 */
export async function deliverDueMail(
  deps: OutboxDeps,
  opts: { limit?: number; leaseMs?: number } = {},
): Promise<DeliveryRun> {
  const nowMs = deps.clock.nowMs();
  const { rows } = await deps.db.query<ClaimedRow>(
    `UPDATE outbox SET next_attempt_at = $2, attempts = attempts + 1
     WHERE id IN (SELECT id FROM outbox WHERE sent_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= $1
                  ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING id, kind, recipient, payload, attempts`,
    [new Date(nowMs), new Date(nowMs + (opts.leaseMs ?? DEFAULT_LEASE_MS)), opts.limit ?? 20],
  );
  const run: DeliveryRun = { claimed: rows.length, sent: 0, failed: 0, dropped: 0 };
  for (const row of rows.sort((a, b) => a.id - b.id)) {
    const result = await deliverOne(deps, row);
    run[result]++;
    deps.onResult?.(result);
  }
  return run;
}

async function deliverOne(deps: OutboxDeps, row: ClaimedRow): Promise<DeliveryResult> {
  const nowMs = deps.clock.nowMs();
  const fence = [row.id, row.attempts];
  const drop = async (reason: string) => {
    await deps.db.query(
      "UPDATE outbox SET dropped_at = $3, dropped_reason = $4 WHERE id = $1 AND attempts = $2 AND sent_at IS NULL",
      [...fence, new Date(nowMs), reason],
    );
    deps.log?.info({ outbox_id: row.id, kind: row.kind, reason }, "notification dropped");
    return "dropped" as const;
  };
  if (row.kind !== ApprovalMailKind.approval_requested && row.kind !== ApprovalMailKind.approval_escalated) {
    return drop(`unknown kind ${row.kind}`);
  }
  const approvalId = String(row.payload.approval_id ?? "");
  try {
    const data = await loadApprovalMailData(deps.db, {
      approvalId,
      kind: row.kind,
      recipient: row.recipient,
    });
    if (!data) return await drop("approval not found");
    if (data.status !== "pending") return await drop(`approval already ${data.status}`);
    if (data.expiresAtMs <= nowMs) return await drop("approval expired");
    const mail = renderApprovalMail(data, { publicUrl: deps.publicUrl, linkKey: deps.linkKey, nowMs });
    const info = await deps.transport.send({
      from: deps.from,
      to: row.recipient,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      headers: {
        "X-Tollgate-Approval-Id": approvalId,
        "X-Tollgate-Notification": row.kind,
        // Idempotency hint for receiving systems: the same row always has the same id.
        "X-Tollgate-Outbox-Id": String(row.id),
        "Auto-Submitted": "auto-generated",
      },
    });
    await deps.db.query(
      "UPDATE outbox SET sent_at = $3, last_error = NULL, message_id = $4 WHERE id = $1 AND attempts = $2",
      [...fence, new Date(deps.clock.nowMs()), info.messageId ?? null],
    );
    deps.log?.info({ outbox_id: row.id, kind: row.kind, attempts: row.attempts }, "notification sent");
    return "sent";
  } catch (err) {
    const delay = retryDelayMs(row.attempts);
    const message = describeError(err);
    await deps.db.query(
      "UPDATE outbox SET next_attempt_at = $3, last_error = $4 WHERE id = $1 AND attempts = $2 AND sent_at IS NULL",
      [...fence, new Date(nowMs + delay), message],
    );
    deps.log?.warn(
      { outbox_id: row.id, kind: row.kind, attempts: row.attempts, retry_in_ms: delay, error: message },
      "notification delivery failed; will retry",
    );
    return "failed";
  }
}

/** A short error description without secrets (SMTP responses carry no credentials). */
function describeError(err: unknown): string {
  const e = err as { code?: string; responseCode?: number; message?: string };
  const parts = [e.code, e.responseCode, e.message].filter((p) => p !== undefined && p !== "");
  return parts.join(" ").slice(0, 500) || "unknown error";
}

/** Polls the outbox every `intervalMs` until stopped. */
export class OutboxWorker {
  private readonly loop: PollingLoop;

  constructor(
    private readonly deps: OutboxDeps,
    private readonly opts: { intervalMs: number; limit?: number; leaseMs?: number },
  ) {
    this.loop = new PollingLoop(() => this.runOnce(), {
      intervalMs: opts.intervalMs,
      log: deps.log,
      what: "outbox delivery run",
    });
  }

  /** One delivery run now (tests call this instead of start()). */
  runOnce(): Promise<DeliveryRun> {
    return deliverDueMail(this.deps, this.opts);
  }

  start(): void {
    this.loop.start();
  }

  /** Stops polling, waits for the run in progress and closes the transport. */
  async stop(): Promise<void> {
    await this.loop.stop();
    this.deps.transport.close();
  }
}
