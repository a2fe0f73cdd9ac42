/**
 * Admission of GovernancePolicies (issue 28): each custom rule's CEL expression is compiled with
 * the compiler the governance service uses (src/policy/cel.ts compileExpression), so a policy
 * whose expression does not compile is refused by `kubectl apply` with the rule and the position,
 * instead of being stored and then reported as Synced=False by the reconcile. Everything else in
 * the spec is checked by the CRD's OpenAPI schema and its CEL rules before this webhook is asked.
 */
import { compileExpression } from "../../src/policy/cel.js";

/** The parts of an AdmissionReview request the validator reads (server.ts AdmissionReviewSchema). */
export interface PolicyReviewRequest {
  uid: string;
  kind: { group: string; kind: string };
  operation: string;
  object?: Record<string, unknown> | null;
}

/** The validator's `response` (an AdmissionResponse without a patch). */
export interface PolicyReviewResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
}

/**
 * Why the custom rules of a GovernancePolicy spec cannot be applied, one message per refused
 * expression (`spec.customRules[1].expression: custom rule "typo": invalid CEL expression: ...
 * at line 2, column 9`); empty when every expression compiles. `spec` is the object as sent to
 * the API server (not yet validated by zod: anything not shaped like a rule is skipped, the
 * CRD schema refuses it).
 */
export function expressionErrors(spec: unknown): string[] {
  const rules = (spec as { customRules?: unknown } | null | undefined)?.customRules;
  if (!Array.isArray(rules)) return [];
  const errors: string[] = [];
  rules.forEach((rule: { name?: unknown; expression?: unknown } | null, i) => {
    if (typeof rule?.expression !== "string") return;
    const compiled = compileExpression(rule.expression);
    if (compiled.ok) return;
    errors.push(
      `spec.customRules[${i}].expression: custom rule ${JSON.stringify(String(rule.name ?? i))}: invalid CEL expression: ${compiled.error.message}`,
    );
  });
  return errors;
}

/**
 * Answers one review of the policy validator: GovernancePolicy CREATE and UPDATE requests are
 * refused (code 422, the messages of {@link expressionErrors} joined by "; ") when an expression
 * does not compile; anything else is allowed.
 */
export function reviewPolicy(req: PolicyReviewRequest): PolicyReviewResponse {
  const uid = req.uid;
  const isPolicy = req.kind.group === "tollgate.dev" && req.kind.kind === "GovernancePolicy";
  if (!isPolicy || (req.operation !== "CREATE" && req.operation !== "UPDATE") || !req.object) {
    return { uid, allowed: true };
  }
  const errors = expressionErrors((req.object as { spec?: unknown }).spec);
  if (errors.length === 0) return { uid, allowed: true };
  return { uid, allowed: false, status: { code: 422, message: errors.join("; ") } };
}
