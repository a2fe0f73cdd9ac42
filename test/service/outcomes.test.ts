import { describe, expect, it } from "vitest";
import { useOutcomeFixture } from "../support/outcomes.js";

const sha = "a".repeat(64);
const success = { status: "success", error_class: null, duration_ms: 12.5, result_sha256: sha };

describe("POST /v1/chains/{chain_id}/events/{event_id}/outcome", () => {
  const f = useOutcomeFixture("outcomes");
  const { openChain, record } = f;
  const report = (chainId: string, eventId: string, body: unknown, token = f.org.clientKey) =>
    f.t.call("POST", `/v1/chains/${chainId}/events/${eventId}/outcome`, { token, body });

  it("binds the outcome of an allowed event once and shows it in the chain and the receipt", async () => {
    const chainId = await openChain();
    const ok = await record(chainId, "read_file");
    const failed = await record(chainId, "write_file");
    const silent = await record(chainId, "list_files");
    expect(ok.policy_decision).toBe("allow");

    const r = await report(chainId, ok.event_id, success);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toEqual({ chain_id: chainId, event_id: ok.event_id, outcome: success });
    const err = { status: "error", error_class: "UpstreamTimeout", duration_ms: 0, result_sha256: null };
    expect((await report(chainId, failed.event_id, err)).statusCode).toBe(200);

    const again = await report(chainId, ok.event_id, { ...success, duration_ms: 1 });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe("TG_ERR_OUTCOME_RECORDED");

    const chain = await f.t.call("GET", `/v1/chains/${chainId}`, { token: f.org.clientKey });
    const events = chain.json().events as { event_id: string; outcome: unknown }[];
    expect(events.find((e) => e.event_id === ok.event_id)?.outcome).toEqual(success);

    expect(
      (await f.t.call("POST", `/v1/chains/${chainId}/complete`, { token: f.org.clientKey, body: {} }))
        .statusCode,
    ).toBe(200);
    const receipt = await f.t.call("GET", `/v1/chains/${chainId}/receipt`, { token: f.org.clientKey });
    const summary = receipt.json().events_summary as { event_id: string; outcome: unknown }[];
    expect(summary.map((e) => [e.event_id, e.outcome])).toEqual([
      [ok.event_id, success],
      [failed.event_id, err],
      [silent.event_id, null],
    ]);

    const late = await report(chainId, silent.event_id, success);
    expect(late.statusCode).toBe(409);
    expect(late.json().code).toBe("TG_ERR_CHAIN_COMPLETED");
  });

  it("refuses outcomes for denied and still-pending actions, and accepts one after approval", async () => {
    const chainId = await openChain();
    const denied = await record(chainId, "drop_table");
    expect(denied.policy_decision).toBe("deny");
    const d = await report(chainId, denied.event_id, success);
    expect(d.statusCode).toBe(409);
    expect(d.json().code).toBe("TG_ERR_ACTION_NOT_ALLOWED");

    const pay = await record(chainId, "pay", { amount_usd: 9000 });
    expect(pay.policy_decision).toBe("require_approval");
    const pending = await report(chainId, pay.event_id, success);
    expect(pending.statusCode).toBe(409);
    expect(pending.json().code).toBe("TG_ERR_ACTION_NOT_ALLOWED");

    const ok = await f.t.call("POST", `/v1/approvals/${pay.approval_id}/decision`, {
      token: f.org.adminKey,
      body: { decision: "approve" },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await report(chainId, pay.event_id, success)).statusCode).toBe(200);
  });

  it("validates the body, naming the field, and hides other organizations' events", async () => {
    const chainId = await openChain();
    const ev = await record(chainId, "read_file");
    const bad = await report(chainId, ev.event_id, { ...success, result_sha256: "sha256:abc" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("result_sha256");
    const negative = await report(chainId, ev.event_id, { ...success, duration_ms: -1 });
    expect(negative.statusCode).toBe(400);
    expect(negative.json().message).toContain("duration_ms");
    const extra = await report(chainId, ev.event_id, { ...success, result: "x" });
    expect(extra.statusCode).toBe(400);

    const unknownEvent = await report(chainId, "00000000-0000-4000-8000-000000000000", success);
    expect(unknownEvent.statusCode).toBe(404);
    const foreign = await report(chainId, ev.event_id, success, f.other.clientKey);
    expect(foreign.statusCode).toBe(404);
    const anonymous = await f.t.call("POST", `/v1/chains/${chainId}/events/${ev.event_id}/outcome`, {
      body: success,
    });
    expect(anonymous.statusCode).toBe(401);
    // none of the refused reports left a trace; of two concurrent reports exactly one wins
    const both = await Promise.all([
      report(chainId, ev.event_id, success),
      report(chainId, ev.event_id, success),
    ]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 409]);
  });
});
