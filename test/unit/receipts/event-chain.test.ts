/**
 * The event hash chain (src/receipts/event-chain.ts): what the hash covers, the receipt's
 * commitment, and `verifyEventChain` naming each kind of tampering — an altered field, a
 * deleted, inserted, replaced or reordered event — by sequence and event id.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type EventRecord,
  eventHash,
  eventHashInput,
  hashEventChain,
  outcomeSha256,
  verifyEventChain,
} from "../../../src/receipts/event-chain.js";
import { ReceiptBodySchema } from "../../../src/receipts/schema.js";
import { clone, makeBody, makeEventRecords, makeExportedEvents, summarizeEvents, uuid } from "./fixtures.js";

const records = makeEventRecords(1);
const body = makeBody(1);
const check = (items: unknown[]) => verifyEventChain(body, items, "PR-2026-00001");

describe("event hashes", () => {
  it("are sha256:<hex> over canonical JSON, chained through the previous hash", () => {
    const first = eventHash(records[0]!, null);
    expect(first).toMatch(/^sha256:[0-9a-f]{64}$/);
    const input = JSON.parse(eventHashInput(records[1]!, first));
    expect(input).toMatchObject({ type: "tollgate.event.v1", previous_event_hash: first, sequence: 2 });
    expect(input).not.toHaveProperty("outcome");
    expect(input.outcome_sha256).toBeNull();
    expect(JSON.parse(eventHashInput(records[0]!, null)).outcome_sha256).toBe(
      outcomeSha256(records[0]!.outcome),
    );
    expect(eventHash(records[1]!, first)).not.toBe(eventHash(records[1]!, null));
  });

  it("do not depend on key order (RFC 8785)", () => {
    const reordered = Object.fromEntries(Object.entries(records[0]!).reverse()) as EventRecord;
    reordered.payload = Object.fromEntries(Object.entries(records[0]!.payload).reverse());
    expect(eventHash(reordered, null)).toBe(eventHash(records[0]!, null));
  });

  it.each<[string, (r: EventRecord) => void]>([
    ["sequence", (r) => (r.sequence = 3)],
    ["event_id", (r) => (r.event_id = uuid(99))],
    ["chain_id", (r) => (r.chain_id = uuid(99))],
    ["agent_name", (r) => (r.agent_name = "mallory")],
    ["parent_agent_name", (r) => (r.parent_agent_name = null)],
    ["action_type", (r) => (r.action_type = "state_update")],
    ["action_name", (r) => (r.action_name = "read_invoice")],
    ["category", (r) => (r.category = "general")],
    ["payload amount", (r) => (r.payload.amount_usd = 75)],
    ["payload key added", (r) => (r.payload.extra = true)],
    ["decision", (r) => (r.decision.policy_decision = "deny")],
    ["decision_source", (r) => (r.decision.decision_source = "backend_evaluation")],
    ["decision reason", (r) => (r.decision.decision_reason = "fine")],
    ["exception_id", (r) => (r.exception_id = uuid(98))],
    ["approval_id", (r) => (r.approval_id = null)],
    [
      "outcome",
      (r) => (r.outcome = { status: "error", error_class: "Timeout", duration_ms: 1, result_sha256: null }),
    ],
    ["recorded_at", (r) => (r.recorded_at = "2026-01-15T12:02:00.001Z")],
  ])("cover %s", (_name, mutate) => {
    const changed = clone(records[1]!);
    mutate(changed);
    expect(eventHash(changed, "sha256:" + "0".repeat(64))).not.toBe(
      eventHash(records[1]!, "sha256:" + "0".repeat(64)),
    );
  });

  it("the commitment is the last hash and the count; an empty chain has a null head", () => {
    const { hashes, commitment } = hashEventChain(records);
    expect(commitment).toEqual({ format: "tollgate.event-chain.v1", event_count: 2, head_hash: hashes[1] });
    expect(hashes[1]).toBe(eventHash(records[1]!, hashes[0]!));
    expect(hashEventChain([]).commitment).toEqual({
      format: "tollgate.event-chain.v1",
      event_count: 0,
      head_hash: null,
    });
  });

  it("the receipt schema holds the commitment to its events_summary", () => {
    expect(ReceiptBodySchema.safeParse(body).success).toBe(true);
    const wrongHead = clone(body);
    wrongHead.event_chain.head_hash = wrongHead.events_summary[0]!.event_hash;
    expect(ReceiptBodySchema.safeParse(wrongHead).error?.issues[0]?.path).toEqual([
      "event_chain",
      "head_hash",
    ]);
    const wrongCount = clone(body);
    wrongCount.event_chain.event_count = 3;
    expect(ReceiptBodySchema.safeParse(wrongCount).success).toBe(false);
    const dropped = clone(body);
    dropped.events_summary.pop();
    expect(ReceiptBodySchema.safeParse(dropped).success).toBe(false);
    const empty = makeBody(1, null, { ...summarizeEvents([]), total_actions: 0, agents_involved: [] });
    expect(ReceiptBodySchema.safeParse(empty).success).toBe(true);
  });
});

describe("verifyEventChain", () => {
  it("accepts the stored records and the exported items of an intact chain", () => {
    expect(check(records)).toEqual({ status: "valid", event_count: 2, mismatches: [], problems: [] });
    expect(check(makeExportedEvents(1)).status).toBe("valid");
    const none = makeBody(1, null, { ...summarizeEvents([]), total_actions: 0 });
    expect(verifyEventChain(none, [], "r").status).toBe("valid");
  });

  it("names an altered event alone (deny → allow, 7500 → 75, renamed)", () => {
    for (const mutate of [
      (r: EventRecord) => (r.decision.policy_decision = "deny"),
      (r: EventRecord) => (r.payload.amount_usd = 75),
      (r: EventRecord) => (r.action_name = "refund"),
    ]) {
      const tampered = clone(records);
      mutate(tampered[1]!);
      const r = check(tampered);
      expect(r.status).toBe("invalid");
      expect(r.mismatches).toEqual([{ kind: "altered", sequence: 2, event_id: uuid(1, 4) }]);
      expect(r.problems[0]).toContain(`event #2 (${uuid(1, 4)}) of PR-2026-00001 was altered`);
    }
    const first = clone(records);
    first[0]!.agent_name = "x";
    expect(check(first).mismatches).toEqual([{ kind: "altered", sequence: 1, event_id: uuid(1, 6) }]);
  });

  it("names a deleted event as missing, and only that one", () => {
    const r = check([records[1]]);
    expect(r.mismatches).toEqual([{ kind: "missing", sequence: 1, event_id: uuid(1, 6) }]);
    expect(r.problems.join()).toContain("is missing: it was deleted");
    expect(check([records[0]]).mismatches).toEqual([{ kind: "missing", sequence: 2, event_id: uuid(1, 4) }]);
    expect(check([]).mismatches.map((m) => m.kind)).toEqual(["missing", "missing"]);
  });

  it("names an inserted event as unexpected (a new sequence, or a repeated one)", () => {
    const extra: EventRecord = { ...clone(records[1]!), sequence: 3, event_id: uuid(7, 7) };
    const r = check([...records, extra]);
    expect(r.mismatches).toEqual([{ kind: "unexpected", sequence: 3, event_id: uuid(7, 7) }]);
    expect(r.problems[0]).toContain("is not in the receipt: it was inserted");
    const dup = check([records[0], records[1], { ...clone(records[1]!), event_id: uuid(7, 8) }]);
    expect(dup.mismatches).toEqual([{ kind: "unexpected", sequence: 2, event_id: uuid(7, 8) }]);
  });

  it("names reordered events: swapped sequence numbers, or listed out of order", () => {
    const swapped = clone(records);
    swapped[0]!.sequence = 2;
    swapped[1]!.sequence = 1;
    const r = check([swapped[1], swapped[0]]);
    expect(r.mismatches.map((m) => [m.kind, m.sequence])).toEqual([
      ["altered", 1],
      ["altered", 2],
    ]);
    expect(r.problems[0]).toContain("is not the event the receipt committed to");
    const listed = check([records[1], records[0]]);
    expect(listed.status).toBe("invalid");
    expect(listed.mismatches).toEqual([{ kind: "out_of_order", sequence: 1, event_id: uuid(1, 6) }]);
  });

  it("rejects malformed items, events of another chain and a wrong listed event_hash", () => {
    expect(check([{ nope: 1 }, records[1]]).mismatches.map((m) => m.kind)).toEqual(["malformed", "missing"]);
    const foreign = clone(records);
    foreign[1]!.chain_id = uuid(5, 2);
    expect(check(foreign).mismatches.map((m) => m.kind)).toEqual(["unexpected", "missing"]);
    const items = makeExportedEvents(1);
    items[0]!.event_hash = items[1]!.event_hash;
    expect(check(items).mismatches).toEqual([{ kind: "altered", sequence: 1, event_id: uuid(1, 6) }]);
  });

  it("fails when the receipt carries no readable commitments", () => {
    const { event_chain: _c, ...noChain } = clone(body);
    const r = verifyEventChain(noChain as never, records, "r1");
    expect(r.status).toBe("invalid");
    expect(r.problems[0]).toContain("r1 carries no readable event commitments");
  });

  it("any single changed payload value is detected (property)", () => {
    fc.assert(
      fc.property(fc.string(), fc.jsonValue(), (key, value) => {
        const tampered = clone(records);
        const before = JSON.stringify(tampered[0]!.payload);
        (tampered[0]!.payload as Record<string, unknown>)[key] = value;
        fc.pre(JSON.stringify(tampered[0]!.payload) !== before);
        const r = check(JSON.parse(JSON.stringify(tampered)));
        return r.status === "invalid" && r.mismatches[0]?.sequence === 1;
      }),
      { numRuns: 200 },
    );
  });
});
