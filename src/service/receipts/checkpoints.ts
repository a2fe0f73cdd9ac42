/**
 * The published checkpoint of an organization's receipt log (issue 18 §2; README
 * "Checkpoints"): GET /v1/receipts/checkpoint signs, with the active receipt key, where the
 * stored log ends now. Chain completion returns the checkpoint of the receipt it issued
 * (receipts.ts). Whoever keeps a checkpoint can later show that the log no longer extends it:
 * `tollgate verify --checkpoint` offline, POST /v1/verification/v2/checkpoints on the service.
 */
import { type Checkpoint, signCheckpoint } from "../../receipts/checkpoint.js";
import type { Queryable } from "../db/pool.js";
import type { SigningKeys } from "./signing-keys.js";

/**
 * A checkpoint of the organization's newest stored receipt (sequence 0 and null number and hash
 * when it has none), issued at `nowMs`.
 */
export async function latestCheckpoint(
  q: Queryable,
  opts: { orgId: string; keys: SigningKeys; nowMs: number },
): Promise<Checkpoint> {
  const org = await q.query<{ slug: string }>("SELECT slug FROM organizations WHERE id = $1", [opts.orgId]);
  const { rows } = await q.query<{ sequence: string; receipt_number: string; receipt_hash: string }>(
    "SELECT sequence, receipt_number, receipt_hash FROM receipts WHERE org_id = $1 ORDER BY sequence DESC LIMIT 1",
    [opts.orgId],
  );
  const head = rows[0];
  const key = await opts.keys.active("receipt");
  return signCheckpoint(
    {
      organization: org.rows[0]!.slug,
      sequence: head ? Number(head.sequence) : 0,
      receipt_number: head?.receipt_number ?? null,
      receipt_hash: head?.receipt_hash ?? null,
      issued_at: new Date(opts.nowMs).toISOString(),
    },
    key,
  );
}
