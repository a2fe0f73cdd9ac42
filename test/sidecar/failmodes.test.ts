/**
 * Fail modes with the governance service stopped: each action category follows its fail mode
 * (deny → UNAVAILABLE, nothing forwarded; allow → forwarded and flagged, nothing recorded).
 * The sidecar is configured with TOLLGATE_FAIL_MODES {"financial":"allow"} over the SDK's
 * service defaults (external_communication deny, default allow).
 */
import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectFailure, type Stack, startStack } from "./harness.js";

describe("sidecar fail modes with the service stopped", () => {
  let s: Stack;
  let chainId: string;

  beforeAll(async () => {
    s = await startStack({
      slug: "failmodes-org",
      config: { failModes: { financial: "allow" }, backendTimeoutSeconds: 2 },
    });
    chainId = await s.openChain("before-the-outage");
    await s.t.service.close(); // the service stops answering; its database stays
  });
  afterAll(async () => s?.close());

  const invoke = (action: string, payload: Record<string, unknown>) =>
    s.invoke({ chain_id: chainId, action_name: action, payload, upstream: "tools" });
  const calls = (action: string) =>
    s.tools.calls.filter((c) => c.headers["x-tollgate-action-name"] === action);

  it("fail mode allow (default category): forwarded and flagged, decision_source fail_mode, no event", async () => {
    const r = await invoke("read_file", { path: "/tmp/a" });
    expect(r.forwarded).toBe(true);
    expect(r.decision).toMatchObject({
      policy_decision: "allow_with_flag",
      flagged: true,
      decision_source: "fail_mode",
      category: "default",
    });
    expect(r.decision?.event_id).toBeUndefined();
    expect(calls("read_file")).toHaveLength(1);
    expect(calls("read_file")[0]?.headers["x-tollgate-event-id"]).toBeUndefined();
  });

  it("configured fail mode allow (financial): forwarded and flagged", async () => {
    const r = await invoke("pay", { amount_usd: 20 });
    expect(r.decision).toMatchObject({
      policy_decision: "allow_with_flag",
      decision_source: "fail_mode",
      category: "financial",
    });
    expect(calls("pay")).toHaveLength(1);
  });

  it("fail mode deny (external_communication, service default): UNAVAILABLE, nothing forwarded", async () => {
    const err = await expectFailure(invoke("send_email", { to: "someone@outside.example", body: "hi" }));
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.errorCode).toBe("BACKEND_UNAVAILABLE");
    expect(err.details).toContain("external_communication");
    expect(calls("send_email")).toHaveLength(0);
  });

  it("no chain can be opened without the service", async () => {
    const err = await expectFailure(s.rpc("OpenChain", { name: "during-the-outage" }));
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.errorCode).toBe("BACKEND_UNAVAILABLE");
  });

  it("counts the outage in the metrics", async () => {
    const text = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(text).toMatch(
      /tollgate_sidecar_invocations_total\{decision="backend_unavailable",surface="grpc"\} 1/,
    );
    expect(text).toMatch(/tollgate_sidecar_invocations_total\{decision="allow_with_flag",surface="grpc"\} 2/);
    expect(text).toMatch(/tollgate_sidecar_errors_total\{kind="backend"\} [1-9]/);
    // What the alerts TollgateSidecarFailOpen / FailClosed watch: the two flagged allows and the
    // one refusal; the refused OpenChain is not a fail mode (no action was decided).
    expect(text).toMatch(/^tollgate_sidecar_fail_mode_total\{mode="allow"\} 2$/m);
    expect(text).toMatch(/^tollgate_sidecar_fail_mode_total\{mode="deny"\} 1$/m);
  });
});
