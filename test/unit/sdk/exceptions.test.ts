/** The error hierarchy of the spec, decision conversion, and the abortable sleep. */
import { describe, expect, it } from "vitest";
import {
  failModeAllowDecision,
  PolicyDecisionSchema,
  RecordActionResponseSchema,
} from "../../../src/sdk/decision.js";
import {
  ActionDeniedError,
  BackendUnavailableError,
  ChainAutoPausedError,
  ChainTimeoutError,
  PolicyViolationError,
  RuntimeError,
  ServiceApiError,
  ServiceKillSwitchError,
  ServicePolicyError,
  VerificationError,
} from "../../../src/sdk/exceptions.js";
import { realSleep } from "../../../src/sdk/sleep.js";

const decision = RecordActionResponseSchema.parse({
  policy_decision: "deny",
  kill_switch_active: true,
  event_id: "e1",
});

describe("error hierarchy (spec: Errors)", () => {
  it.each([
    ["ActionDeniedError", new ActionDeniedError("human_approval", "no", "p", decision)],
    ["PolicyViolationError", new PolicyViolationError("gate closed", "TG_ERR_APPROVAL_PENDING")],
    ["ServiceKillSwitchError", new ServiceKillSwitchError(decision)],
  ])("%s is a ServicePolicyError", (name, err) => {
    expect(err).toBeInstanceOf(ServicePolicyError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe(name);
  });

  it.each([
    ["BackendUnavailableError", new BackendUnavailableError("down")],
    ["ChainTimeoutError", new ChainTimeoutError("c", "a", 24)],
    ["ChainAutoPausedError", new ChainAutoPausedError("c", "limit")],
    ["VerificationError", new VerificationError()],
    ["RuntimeError", new RuntimeError("x")],
    ["ServiceApiError", new ServiceApiError(404, "TG_ERR_NOT_FOUND", "nf")],
  ])("%s is a plain Error, not a policy denial", (name, err) => {
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(ServicePolicyError);
    expect(err.name).toBe(name);
  });

  it("ActionDeniedError carries decisionSource, condition, policyName and the decision", () => {
    const err = new ActionDeniedError(
      "backend_evaluation",
      "Approval not resolved within 24 hours",
      null,
      decision,
    );
    expect(err.decisionSource).toBe("backend_evaluation");
    expect(err.condition).toContain("not resolved within");
    expect(err.policyName).toBeNull();
    expect(err.decision).toBe(decision);
    expect(err.message).toMatch(/not resolved within/);
  });

  it("VerificationError reveals nothing", () => {
    expect(new VerificationError().message).toBe("Verification is unavailable for this token");
  });
});

describe("decisions", () => {
  it("is the wire decision as the contract parses it: every spec default, the wire's snake_case names", () => {
    const d = RecordActionResponseSchema.parse({
      policy_decision: "allow_with_flag",
      event_id: "e",
      sequence: 3,
      category: "default",
    });
    expect(d).toEqual({
      policy_decision: "allow_with_flag",
      decision_reason: "",
      decision_source: "backend_evaluation",
      policy_name: null,
      kill_switch_active: false,
      pause_reason: null,
      remediation: null,
      docs_url: null,
      evaluation_mode: null,
      shadow_decision: null,
      estimated_cost_usd: null,
      auto_paused: false,
      event_id: "e",
      sequence: 3,
      category: "default",
      approval_id: null,
      approval_expires_at: null,
      exception_id: null,
    });
  });

  it("the fail-mode allow is flagged, unrecorded and says why", () => {
    const d = failModeAllowDecision("default", "default", "connection refused");
    expect(PolicyDecisionSchema.parse(d)).toEqual(d);
    expect(d).toMatchObject({
      policy_decision: "allow_with_flag",
      event_id: null,
      decision_source: "fail_mode",
    });
    expect(d.decision_reason).toContain("Backend unavailable (connection refused)");
  });
});

describe("realSleep", () => {
  it("rejects with the signal's reason when aborted, and at once when already aborted", async () => {
    const c = new AbortController();
    const reason = new Error("stop");
    const p = realSleep(60_000, c.signal);
    c.abort(reason);
    await expect(p).rejects.toBe(reason);
    await expect(realSleep(1, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it("resolves after the delay", async () => {
    await expect(realSleep(1)).resolves.toBeUndefined();
  });
});
