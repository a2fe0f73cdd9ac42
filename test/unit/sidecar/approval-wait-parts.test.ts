/**
 * Pure parts of the approval-wait work (issue 21): Origin validation of the MCP face, the
 * idempotency key's validation, the call fingerprint, and the google.rpc.Status of
 * grpc-status-details-bin round-tripped through the standard message definitions.
 */
import { describe, expect, it } from "vitest";
import { LOCAL_ORIGINS, parseConfig } from "../../../sidecar/config.js";
import { fingerprintOf, reattachKey } from "../../../sidecar/core/fingerprint.js";
import { originAllowed } from "../../../sidecar/faces/mcp/origin.js";
import { ErrorCode, GatewayError, invalidArgument } from "../../../sidecar/wire/errors.js";
import { decodeStatusDetails, encodeStatusDetails } from "../../../sidecar/wire/status-details.js";
import type { InvokeInput } from "../../../sidecar/wire/validate.js";
import { parseIdempotencyKey } from "../../../sidecar/wire/validate.js";

describe("originAllowed", () => {
  it.each([
    [undefined, LOCAL_ORIGINS, true],
    ["http://localhost:5173", LOCAL_ORIGINS, true],
    ["http://127.0.0.1", LOCAL_ORIGINS, true],
    ["http://[::1]:8080", LOCAL_ORIGINS, true],
    ["https://evil.example", LOCAL_ORIGINS, false],
    ["http://localhost.evil.example", LOCAL_ORIGINS, false],
    ["null", LOCAL_ORIGINS, false],
    ["ftp://localhost", LOCAL_ORIGINS, false],
    ["https://agents.example:8443", ["https://agents.example:8443"], true],
    ["https://agents.example:9443", ["https://agents.example:8443"], false],
    ["https://agents.example", ["https://agents.example"], true],
    ["http://agents.example", ["https://agents.example"], false],
  ] as const)("%s against %j → %s", (origin, allowed, expected) => {
    expect(originAllowed(origin, allowed)).toBe(expected);
  });

  it("TOLLGATE_MCP_ALLOWED_ORIGINS defaults to local only and rejects malformed entries", () => {
    const base = { serviceUrl: "http://svc:8080" };
    expect(parseConfig(base).mcpAllowedOrigins).toEqual([...LOCAL_ORIGINS]);
    expect(parseConfig({ ...base, mcpAllowedOrigins: ["HTTPS://Agents.Example"] }).mcpAllowedOrigins).toEqual(
      ["https://agents.example"],
    );
    expect(() => parseConfig({ ...base, mcpAllowedOrigins: ["agents.example"] })).toThrow(
      /TOLLGATE_MCP_ALLOWED_ORIGINS/,
    );
    expect(() => parseConfig({ ...base, mcpProgressIntervalSeconds: 30 })).toThrow(
      /TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS/,
    );
  });
});

describe("idempotency key and fingerprint", () => {
  it.each([
    ["k-1", undefined, "k-1"],
    ["", "from-metadata", "from-metadata"],
    ["field", "metadata", "field"],
    ["", "", null],
    [undefined, undefined, null],
  ] as const)("field %j, metadata %j → %j", (field, metadata, expected) => {
    expect(parseIdempotencyKey(field, metadata)).toBe(expected);
  });

  it("refuses keys with spaces or over 200 characters, naming where the key came from", () => {
    expect(() => parseIdempotencyKey("a b", undefined)).toThrow(/^idempotency_key: /);
    expect(() => parseIdempotencyKey("", "x".repeat(201))).toThrow(/^tollgate-idempotency-key: /);
  });

  const input: InvokeInput = {
    chainId: "00000000-0000-4000-8000-000000000000",
    agentName: "worker",
    actionType: "tool_call",
    actionName: "deploy",
    payload: { b: 1, a: [1, 2] },
    parentAgentName: null,
    upstream: "tools",
  };
  it("the fingerprint ignores key order and changes with any part of the call", () => {
    expect(fingerprintOf({ ...input, payload: { a: [1, 2], b: 1 } })).toBe(fingerprintOf(input));
    expect(fingerprintOf({ ...input, payload: { a: [2, 1], b: 1 } })).not.toBe(fingerprintOf(input));
    expect(fingerprintOf({ ...input, upstream: null })).not.toBe(fingerprintOf(input));
    expect(reattachKey(input, "k")).toBe("key:k");
    expect(reattachKey(input, null)).toBe(`fp:${fingerprintOf(input)}`);
  });
});

describe("grpc-status-details-bin", () => {
  it("carries ErrorInfo with the approval context", () => {
    const e = new GatewayError(ErrorCode.APPROVAL_PENDING, "waits for approval a-1", null, {
      approvalId: "a-1",
      reviewUrl: "https://tg.example/dashboard/approvals#approval-a-1",
      policyName: "review-deploys",
    });
    expect(decodeStatusDetails(encodeStatusDetails(e, "c-1"))).toEqual({
      code: 9,
      message: "waits for approval a-1",
      errorInfo: {
        reason: "APPROVAL_PENDING",
        domain: "tollgate.dev",
        metadata: {
          approval_id: "a-1",
          review_url: "https://tg.example/dashboard/approvals#approval-a-1",
          policy_name: "review-deploys",
          chain_id: "c-1",
        },
      },
      fieldViolations: [],
    });
  });

  it("carries a BadRequest field violation for bad input", () => {
    const d = decodeStatusDetails(encodeStatusDetails(invalidArgument("agent_name", "is required"), null));
    expect(d.code).toBe(3);
    expect(d.errorInfo).toEqual({ reason: "INVALID_ARGUMENT", domain: "tollgate.dev", metadata: {} });
    expect(d.fieldViolations).toEqual([
      { field: "agent_name", description: "agent_name: is required", reason: "INVALID_ARGUMENT" },
    ]);
  });
});
