/** The GovernancePolicy validator of the operator's webhook: CEL expressions compiled as the service compiles them. */
import { describe, expect, it } from "vitest";
import { expressionErrors, reviewPolicy } from "../../../operator/webhook/policy-validation.js";

/** An AdmissionReview request as the API server sends it. */
const request = (spec: unknown, operation = "CREATE", kind = "GovernancePolicy") => ({
  uid: "u-1",
  kind: { group: "tollgate.dev", version: "v1alpha1", kind },
  namespace: "team-a",
  operation,
  object: { apiVersion: "tollgate.dev/v1alpha1", kind, metadata: { name: "p" }, spec },
});

describe("GovernancePolicy admission", () => {
  const spec = (expression: string) => ({
    organizationRef: { name: "acme" },
    customRules: [
      { name: "fine", expression: "chain.eventCount > 100", outcome: "deny", reason: "long" },
      { name: "no-match-needed", match: { actionName: "x" }, outcome: "allow" },
      { name: "broken", expression, outcome: "deny", reason: "r" },
    ],
  });

  it("names the rule, its index and the position of an expression that does not compile", () => {
    expect(expressionErrors(spec("action.payload.total > 1000 &&& true"))).toEqual([
      expect.stringMatching(
        /^spec\.customRules\[2\]\.expression: custom rule "broken": invalid CEL expression: syntax error: .* at line 1, column 29$/,
      ),
    ]);
    expect(expressionErrors(spec("action.payload.total >\n  action.nmae"))[0]).toMatch(
      /custom rule "broken": invalid CEL expression: 'action' has no field 'nmae' .* at line 2, column 9$/,
    );
  });

  it("allows compiling expressions, other kinds and deletions; refuses with 422 otherwise", () => {
    expect(expressionErrors(spec("action.payload.invoice.total > 1000"))).toEqual([]);
    expect(reviewPolicy(request(spec("action.payload.invoice.total > 1000")))).toEqual({
      uid: "u-1",
      allowed: true,
    });
    const refused = reviewPolicy(request(spec("nope(1)"), "UPDATE"));
    expect(refused.allowed).toBe(false);
    expect(refused.status?.code).toBe(422);
    expect(refused.status?.message).toMatch(/undeclared reference to function 'nope'/);
    expect(reviewPolicy(request(spec("nope(1)"), "DELETE")).allowed).toBe(true);
    expect(reviewPolicy(request(spec("nope(1)"), "CREATE", "ApproverTeam")).allowed).toBe(true);
    // Not shaped like rules: left to the CRD schema.
    expect(expressionErrors({ customRules: "x" })).toEqual([]);
    expect(expressionErrors({ customRules: [null, { expression: 3 }] })).toEqual([]);
  });
});
