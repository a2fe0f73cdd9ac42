/**
 * The published checkpoint of an organization's receipt log (issue 18 §2; README
 * "Checkpoints"): GET /v1/receipts/checkpoint signs, with the active receipt key, where the
 * stored log ends now. Chain completion returns the checkpoint of the receipt it issued
 * (receipts.ts). Whoever keeps a checkpoint can later show that the log no longer extends it:
 * `tollgate verify --checkpoint` offline, POST /v1/verification/v2/checkpoints on the service.
 */
import { type Checkpoint, signCheckpoint } from "../../receipts/checkpoint.js";
import type { Queryable } from "../db/pool.js";
import { orgSlug } from "../orgs/orgs.js";
import type { SigningKeys } from "./signing-keys.js";
import { newestReceipt } from "./store.js";

/**
 * A checkpoint of the organization's newest stored receipt (sequence 0 and null number and hash
 * when it has none), issued at `nowMs`.
 */
export async function latestCheckpoint(
  q: Queryable,
  opts: { orgId: string; keys: SigningKeys; nowMs: number },
): Promise<Checkpoint> {
  const slug = await orgSlug(q, opts.orgId);
  const head = await newestReceipt(q, opts.orgId);
  const key = await opts.keys.active("receipt");
  return signCheckpoint(
    {
      organization: slug!,
      sequence: head ? Number(head.sequence) : 0,
      receipt_number: head?.receipt_number ?? null,
      receipt_hash: head?.receipt_hash ?? null,
      issued_at: new Date(opts.nowMs).toISOString(),
    },
    key,
  );
}
