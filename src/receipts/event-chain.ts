/**
 * The event hash chain of one governed chain (issue 18 §2; README "Event hash chain").
 *
 * Every recorded event is reduced to a canonical record (`EventRecordSchema`): chain and event
 * ids, sequence, agent and delegating agent, action type and name, category, the sanitized
 * payload as stored, the final decision object (after any human approval), the exception and
 * approval ids, the bound outcome and the recording time. Its hash is
 *
 *   event_hash(n) = "sha256:" + hex(SHA-256(RFC 8785 canonical JSON of
 *                     { type: "tollgate.event.v1", previous_event_hash: event_hash(n-1) | null,
 *                       ...record without outcome, outcome_sha256 }))
 *
 * where outcome_sha256 is the SHA-256 (lowercase hex) of the outcome's canonical JSON, or null
 * when no outcome was bound. The receipt carries each event's hash in `events_summary[].
 * event_hash` and commits to the whole chain with `event_chain: { format, event_count,
 * head_hash }`; its HMAC and Ed25519 signatures cover both. Editing, deleting, inserting or
 * reordering a stored event therefore no longer matches the signed receipt, and the per-event
 * hashes say which event changed.
 *
 * Pure: no I/O, no clock. Verification never throws on malformed input; it reports it.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { canonicalJson } from "./canonical.js";
import {
  EVENT_CHAIN_FORMAT,
  type EventOutcome,
  EventOutcomeSchema,
  Sha256RefSchema,
  VerifiedPrincipalSchema,
} from "./schema.js";

/** Value of `type` in every hashed event text, so it can never be mistaken for other signed data. */
export const EVENT_HASH_TYPE = "tollgate.event.v1";

/**
 * The facts of one recorded event that its hash covers, as stored (the service builds it from a
 * chain_events row) and as exported. Strict: an unknown key would not be hashed.
 */
export const EventRecordSchema = z.strictObject({
  chain_id: z.uuid(),
  /** 1-based position of the event within its chain. */
  sequence: z.number().int().positive(),
  event_id: z.uuid(),
  agent_name: z.string(),
  parent_agent_name: z.string().nullable(),
  action_type: z.string(),
  action_name: z.string(),
  /** The category the policy engine assigned (financial, external_communication, ...). */
  category: z.string(),
  /** The payload after server-side sanitization, exactly as stored. */
  payload: z.record(z.string(), z.json()),
  /** The final PolicyDecision object (policy_decision, decision_source, policy_name, ...). */
  decision: z.record(z.string(), z.json()),
  exception_id: z.uuid().nullable(),
  approval_id: z.uuid().nullable(),
  /** The outcome bound to the event (hashed as outcome_sha256); null when none was reported. */
  outcome: EventOutcomeSchema.nullable(),
  /** ISO 8601 UTC. */
  recorded_at: z.iso.datetime(),
  /**
   * The verified workload identity that recorded the event. Absent (not null) when there was
   * none, so the hash of an event recorded without identity is what it always was.
   */
  principal: VerifiedPrincipalSchema.optional(),
});
export type EventRecord = z.infer<typeof EventRecordSchema>;

/** An event as a receipt export carries it: the record plus its hash. */
export const ExportedEventSchema = EventRecordSchema.extend({ event_hash: Sha256RefSchema });
export type ExportedEvent = z.infer<typeof ExportedEventSchema>;

/** The receipt's commitment to its events (`event_chain` of the receipt body). */
export interface EventChainCommitment {
  format: typeof EVENT_CHAIN_FORMAT;
  event_count: number;
  /** The last event's hash; null for a chain without events. */
  head_hash: string | null;
}

/** Lowercase hex SHA-256 of an outcome's canonical JSON; null for no outcome. */
export function outcomeSha256(outcome: EventOutcome | null): string | null {
  return outcome === null ? null : sha256Hex(canonicalJson(outcome));
}

/**
 * The text an event's hash is computed over: canonical JSON (RFC 8785) of the record with
 * `type`, `previous_event_hash` and `outcome_sha256` in place of `outcome`.
 * @throws TypeError when the record holds non-JSON values (see `canonicalJson`).
 */
export function eventHashInput(record: EventRecord, previousHash: string | null): string {
  const { outcome, ...fields } = record;
  return canonicalJson({
    type: EVENT_HASH_TYPE,
    previous_event_hash: previousHash,
    ...fields,
    outcome_sha256: outcomeSha256(outcome),
  });
}

/**
 * `sha256:<64 lowercase hex>` of one event chained to the previous event's hash (null for the
 * first event of a chain). Does not validate the record.
 * @throws TypeError when the record holds non-JSON values.
 */
export function eventHash(record: EventRecord, previousHash: string | null): string {
  return `sha256:${sha256Hex(eventHashInput(record, previousHash))}`;
}

/**
 * Hashes the events of one chain in the given order (sequence 1 first): each event's hash and
 * the commitment a receipt stores.
 * @throws TypeError when a record holds non-JSON values.
 */
export function hashEventChain(records: readonly EventRecord[]): {
  hashes: string[];
  commitment: EventChainCommitment;
} {
  const hashes: string[] = [];
  let previous: string | null = null;
  for (const record of records) {
    previous = eventHash(record, previous);
    hashes.push(previous);
  }
  return {
    hashes,
    commitment: { format: EVENT_CHAIN_FORMAT, event_count: records.length, head_hash: previous },
  };
}

/**
 * What became of one event, judged against the receipt: altered (its stored record no longer
 * hashes to the receipt's event_hash: a field changed, or another event took its sequence),
 * missing (the receipt names it, the stored events lack it: deleted), unexpected (stored but not
 * in the receipt: inserted, or a duplicate sequence), out_of_order (listed after an event with a
 * higher sequence), malformed (not an event record).
 */
export const EventMismatchKind = {
  altered: "altered",
  missing: "missing",
  unexpected: "unexpected",
  out_of_order: "out_of_order",
  malformed: "malformed",
} as const;
export type EventMismatchKind = (typeof EventMismatchKind)[keyof typeof EventMismatchKind];

/** One event that does not match the receipt. */
export interface EventMismatch {
  kind: EventMismatchKind;
  /** The event's sequence (stored or committed); null when it cannot be read. */
  sequence: number | null;
  event_id: string | null;
}

/**
 * Result of checking stored or exported events against a receipt. `status` is valid only when
 * every committed event is present, unchanged and in order, nothing else is there, and the
 * recomputed chain ends in the receipt's head_hash with its event_count.
 */
export interface EventChainCheck {
  status: "valid" | "invalid";
  /** How many event records were checked. */
  event_count: number;
  /** Every event that does not match, in the order found. */
  mismatches: EventMismatch[];
  /** Human-readable problems naming the receipt and the event (sequence and id); never hashes. */
  problems: string[];
}

/** The receipt facts `verifyEventChain` checks events against (a subset of a receipt body). */
export interface EventCommitments {
  chain_id: string;
  events_summary: ReadonlyArray<{ sequence: number; event_id: string; event_hash: string }>;
  event_chain: EventChainCommitment;
}

/**
 * Checks the events of one chain (stored rows, or an export's items, in their given order)
 * against the receipt that committed to them. Each event is hashed with the receipt's hash of
 * the event before it, so one changed event is named alone instead of breaking every later
 * one; the whole chain is then recomputed from the records themselves and must end in the
 * receipt's head_hash.
 *
 * `label` names the receipt in problems (its receipt number). Items may carry an `event_hash`
 * (exports do): it must equal the recomputed hash, and is not hashed itself.
 *
 * Never throws: a receipt without commitments, or malformed records, give invalid.
 */
export function verifyEventChain(
  receipt: EventCommitments,
  records: readonly unknown[],
  label: string,
): EventChainCheck {
  const mismatches: EventMismatch[] = [];
  const problems: string[] = [];
  const committed = commitmentsOf(receipt);
  if (committed === null) {
    return {
      status: "invalid",
      event_count: records.length,
      mismatches,
      problems: [`${label} carries no readable event commitments, so its events cannot be checked`],
    };
  }
  const bySequence = new Map(committed.events.map((e, i) => [e.sequence, { ...e, previous: i }]));
  const seen = new Set<number>();
  const parsed: EventRecord[] = [];
  /** The event_hash each parsed item lists (exports), null when it lists none. */
  const listed: Array<string | null> = [];
  let highest = 0;
  const add = (kind: EventMismatchKind, sequence: number | null, eventId: string | null, text: string) => {
    mismatches.push({ kind, sequence, event_id: eventId });
    problems.push(text);
  };

  records.forEach((item, index) => {
    const { event_hash: listedHash, ...rest } = isObject(item) ? item : ({} as Record<string, unknown>);
    const result = EventRecordSchema.safeParse(rest);
    if (!result.success) {
      const sequence = typeof rest.sequence === "number" ? rest.sequence : null;
      add(
        "malformed",
        sequence,
        typeof rest.event_id === "string" ? rest.event_id : null,
        `event item ${index + 1} of ${label} is not an event record (${issuesOf(result.error)})`,
      );
      return;
    }
    const record = result.data;
    parsed.push(record);
    listed.push(typeof listedHash === "string" ? listedHash : null);
    const name = `event #${record.sequence} (${record.event_id}) of ${label}`;
    if (record.chain_id !== receipt.chain_id) {
      add("unexpected", record.sequence, record.event_id, `${name} belongs to another chain`);
      return;
    }
    if (record.sequence <= highest) {
      if (seen.has(record.sequence)) {
        add(
          "unexpected",
          record.sequence,
          record.event_id,
          `${name} repeats a sequence number: an event was inserted`,
        );
      } else {
        seen.add(record.sequence);
        add(
          "out_of_order",
          record.sequence,
          record.event_id,
          `${name} comes after event #${highest}: the events were reordered`,
        );
      }
      return;
    }
    highest = record.sequence;
    seen.add(record.sequence);
    const expected = bySequence.get(record.sequence);
    if (!expected) {
      add("unexpected", record.sequence, record.event_id, `${name} is not in the receipt: it was inserted`);
      return;
    }
    const previousHash = expected.previous === 0 ? null : committed.events[expected.previous - 1]!.event_hash;
    const hash = attempt(() => eventHash(record, previousHash));
    if (hash !== expected.event_hash) {
      add(
        "altered",
        record.sequence,
        record.event_id,
        record.event_id === expected.event_id
          ? `${name} was altered after the receipt was issued: its recorded fields no longer match the receipt`
          : `event #${record.sequence} of ${label} is not the event the receipt committed to (${expected.event_id}; found ${record.event_id}): events were replaced or reordered`,
      );
    }
  });
  for (const e of committed.events) {
    if (!seen.has(e.sequence)) {
      add(
        "missing",
        e.sequence,
        e.event_id,
        `event #${e.sequence} (${e.event_id}) of ${label} is missing: it was deleted`,
      );
    }
  }

  if (mismatches.length === 0) {
    const recomputed = attempt(() => hashEventChain(parsed));
    if (
      recomputed === null ||
      recomputed.commitment.event_count !== committed.chain.event_count ||
      recomputed.commitment.head_hash !== committed.chain.head_hash
    ) {
      problems.push(`the events of ${label} do not hash to the event chain its receipt committed to`);
    } else {
      // Every record matches; an item that lists a hash must list its own.
      parsed.forEach((record, i) => {
        const own = listed[i];
        if (own !== null && own !== undefined && own !== recomputed.hashes[i]) {
          add(
            "altered",
            record.sequence,
            record.event_id,
            `event #${record.sequence} (${record.event_id}) of ${label} lists an event_hash that is not its own`,
          );
        }
      });
    }
  }
  return {
    status: problems.length === 0 ? "valid" : "invalid",
    event_count: records.length,
    mismatches,
    problems,
  };
}

/** The receipt's event commitments when they are well-formed, else null. */
function commitmentsOf(receipt: EventCommitments): {
  events: Array<{ sequence: number; event_id: string; event_hash: string }>;
  chain: EventChainCommitment;
} | null {
  const shape = z.object({
    chain_id: z.string(),
    events_summary: z.array(
      z.object({ sequence: z.number().int(), event_id: z.string(), event_hash: Sha256RefSchema }),
    ),
    event_chain: z.object({
      format: z.literal(EVENT_CHAIN_FORMAT),
      event_count: z.number().int().nonnegative(),
      head_hash: Sha256RefSchema.nullable(),
    }),
  });
  const parsed = shape.safeParse(receipt);
  if (!parsed.success) return null;
  return { events: parsed.data.events_summary, chain: parsed.data.event_chain };
}

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

function attempt<T>(compute: () => T): T | null {
  try {
    return compute();
  } catch {
    return null;
  }
}

function issuesOf(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
