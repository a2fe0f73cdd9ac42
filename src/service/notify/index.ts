/**
 * Approval notifications: the outbox delivery worker over SMTP, mail rendering and signed
 * links. `createOutboxWorker` wires them to a running service's context.
 */
import type { ServiceParts } from "../parts.js";
import { OutboxWorker } from "./outbox.js";
import { createSmtpTransport, type MailTransport, type SmtpConfig } from "./smtp.js";

export { approvalLinkUrl, checkApprovalLink, consumeApprovalLink, signApprovalLink } from "./links.js";
export { deliverDueMail, OutboxWorker, retryDelayMs } from "./outbox.js";
export { createSmtpTransport, type MailTransport, type SmtpConfig } from "./smtp.js";

/**
 * An outbox worker for the service `ctx` sending through `smtp` (or an explicit transport).
 * Counts results in the tollgate_notifications_total metric when the context has it.
 */
export function createOutboxWorker(
  ctx: Pick<ServiceParts, "db" | "clock" | "publicUrl" | "linkKey" | "log" | "metrics">,
  smtp: SmtpConfig,
  opts: { intervalMs: number; transport?: MailTransport; leaseMs?: number; limit?: number },
): OutboxWorker {
  return new OutboxWorker(
    {
      db: ctx.db,
      clock: ctx.clock,
      transport: opts.transport ?? createSmtpTransport(smtp),
      from: smtp.from,
      publicUrl: ctx.publicUrl,
      linkKey: ctx.linkKey,
      log: ctx.log,
      onResult: (r) => ctx.metrics.notifications.inc({ result: r }),
    },
    { intervalMs: opts.intervalMs, leaseMs: opts.leaseMs, limit: opts.limit },
  );
}
