/**
 * sidecar/wire/errors.ts classifies the SDK's errors by type and the service's codes by the contract's
 * ApiErrorCode table, never by the text of a message.
 */
import { describe, expect, it } from "vitest";
import { toGatewayError } from "../../../sidecar/wire/errors.js";
import { ApiErrorCode } from "../../../src/contract/v1/errors.js";
import { InvalidArgumentError, PolicyViolationError, ServiceApiError } from "../../../src/sdk/index.js";

describe("toGatewayError", () => {
  it("maps the SDK's InvalidArgumentError to INVALID_ARGUMENT naming the request field", () => {
    const e = toGatewayError(
      new InvalidArgumentError("recordAgentAction", [
        { field: "action.parentAgentName", message: "Too big: expected string to have <=200 characters" },
        { field: "action.payload", message: "Invalid input" },
      ]),
    );
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toBe("parent_agent_name: Too big: expected string to have <=200 characters");
    expect(e.context.field).toBe("parent_agent_name");
  });

  it("does not read messages: a plain TypeError that looks like the SDK's is INTERNAL", () => {
    const e = toGatewayError(new TypeError("recordAgentAction: action.agentName: Invalid input"));
    expect(e.code).toBe("INTERNAL");
    expect(e.message).toBe("internal error");
  });

  it("maps the service's codes from the contract table", () => {
    expect(toGatewayError(new ServiceApiError(409, ApiErrorCode.CHAIN_COMPLETED, "done")).code).toBe(
      "CHAIN_COMPLETED",
    );
    expect(toGatewayError(new PolicyViolationError("gate closed", ApiErrorCode.APPROVAL_PENDING)).code).toBe(
      "APPROVAL_PENDING",
    );
    expect(toGatewayError(new PolicyViolationError("other", "TG_ERR_OTHER")).code).toBe("ACTION_DENIED");
  });
});
