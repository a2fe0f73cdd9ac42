/**
 * POST /v1/outcomes: many outcomes in one request, each bound under the same conditions as the
 * single route, each refusal explained with the single route's code; and the SDK's
 * ServiceClient.reportOutcomes over it.
 */
import { describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/sdk/index.js";
import { useOutcomeFixture } from "../support/outcomes.js";

const sha = "b".repeat(64);
const success = { status: "success", error_class: null, duration_ms: 3.25, result_sha256: sha } as const;

describe("POST /v1/outcomes", () => {
  const f = useOutcomeFixture("outcomes-batch", { listen: true });
  const { openChain } = f;
  const record = async (chainId: string, actionName: string) =>
    (await f.record(chainId, actionName)).event_id;
  const batch = (outcomes: unknown[], token = f.org.clientKey) =>
    f.t.call("POST", "/v1/outcomes", { token, body: { outcomes } });

  it("binds every allowed outcome of several chains and explains each refusal in order", async () => {
    const [a, b, sealed] = [await openChain(), await openChain(), await openChain()];
    const a1 = await record(a, "read_file");
    const a2 = await record(a, "write_file");
    const denied = await record(a, "drop_table");
    const b1 = await record(b, "read_file");
    const late = await record(sealed, "read_file");
    const c = await f.t.call("POST", `/v1/chains/${sealed}/complete`, { token: f.org.clientKey, body: {} });
    expect(c.statusCode, c.body).toBe(200);
    const err = { status: "error", error_class: "HTTP 502", duration_ms: 0, result_sha256: null };
    const unknown = "00000000-0000-4000-8000-000000000000";

    const r = await batch([
      { chain_id: a, event_id: a1, outcome: success },
      { chain_id: b, event_id: b1, outcome: err },
      { chain_id: a, event_id: denied, outcome: success },
      { chain_id: sealed, event_id: late, outcome: success },
      { chain_id: a, event_id: unknown, outcome: success },
      { chain_id: a, event_id: a1, outcome: err },
      { chain_id: a, event_id: a2, outcome: success },
    ]);
    expect(r.statusCode, r.body).toBe(200);
    const results = r.json().results as {
      event_id: string;
      recorded: boolean;
      error: { code: string } | null;
    }[];
    expect(results.map((x) => [x.event_id, x.recorded, x.error?.code ?? null])).toEqual([
      [a1, true, null],
      [b1, true, null],
      [denied, false, "TG_ERR_ACTION_NOT_ALLOWED"],
      [late, false, "TG_ERR_CHAIN_COMPLETED"],
      [unknown, false, "TG_ERR_NOT_FOUND"],
      [a1, false, "TG_ERR_OUTCOME_RECORDED"], // the same event twice: the first one binds
      [a2, true, null],
    ]);
    const events = (await f.t.call("GET", `/v1/chains/${a}`, { token: f.org.clientKey })).json().events as {
      event_id: string;
      outcome: unknown;
    }[];
    expect(events.map((e) => [e.event_id, e.outcome])).toEqual([
      [a1, success],
      [a2, success],
      [denied, null],
    ]);
    const single = await f.t.call("POST", `/v1/chains/${a}/events/${a2}/outcome`, {
      token: f.org.clientKey,
      body: success,
    });
    expect(single.json().code).toBe("TG_ERR_OUTCOME_RECORDED");
  });

  it("validates the batch, naming the field, and hides other organizations' events", async () => {
    const chainId = await openChain();
    const ev = await record(chainId, "read_file");
    const bad = await batch([{ chain_id: chainId, event_id: ev, outcome: { ...success, duration_ms: -1 } }]);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("duration_ms");
    expect((await batch([])).statusCode).toBe(400);
    const tooMany = Array.from({ length: 501 }, () => ({
      chain_id: chainId,
      event_id: ev,
      outcome: success,
    }));
    expect((await batch(tooMany)).statusCode).toBe(400);
    expect((await batch([{ chain_id: chainId, event_id: ev, outcome: success, x: 1 }])).statusCode).toBe(400);
    const anonymous = await f.t.call("POST", "/v1/outcomes", {
      body: { outcomes: [{ chain_id: chainId, event_id: ev, outcome: success }] },
    });
    expect(anonymous.statusCode).toBe(401);

    const foreign = await batch([{ chain_id: chainId, event_id: ev, outcome: success }], f.other.clientKey);
    expect(foreign.statusCode).toBe(200);
    expect(foreign.json().results[0]).toMatchObject({ recorded: false, error: { code: "TG_ERR_NOT_FOUND" } });
    const chain = await f.t.call("GET", `/v1/chains/${chainId}`, { token: f.org.clientKey });
    expect(chain.json().events[0].outcome).toBeNull();
  });

  it("ServiceClient.reportOutcomes sends a batch and returns the results in order", async () => {
    const chainId = await openChain();
    const [e1, e2] = [await record(chainId, "read_file"), await record(chainId, "drop_table")];
    const client = new ServiceClient({ apiKey: f.org.clientKey, backendUrl: f.t.url });
    const results = await client.reportOutcomes([
      { chain_id: chainId, event_id: e1, outcome: success },
      { chain_id: chainId, event_id: e2, outcome: success },
    ]);
    expect(results.map((r) => [r.event_id, r.recorded, r.error?.code ?? null])).toEqual([
      [e1, true, null],
      [e2, false, "TG_ERR_ACTION_NOT_ALLOWED"],
    ]);
    await expect(client.reportOutcomes([])).rejects.toThrow(TypeError);
    await expect(
      client.reportOutcomes([
        { chain_id: chainId, event_id: e1, outcome: { ...success, result_sha256: "x" } },
      ]),
    ).rejects.toThrow(/outcomes\.0\.outcome\.result_sha256/);
  });
});
