/**
 * CEL conformance: the 297 core and 20 timestamp vectors of the CEL specification's conformance
 * data (fixtures/cel-conformance.json, a copy of shared/cel-conformance/vectors.json; google/cel-spec
 * tests/simple/testdata, Apache-2.0) run three ways:
 *   1. through the library alone (@bufbuild/cel `run`): every vector passes;
 *   2. through Tollgate's wrapper (compileExpression + evaluateExpression): every vector passes
 *      except the ones the wrapper refuses at compile time on purpose, listed here by id
 *      (undeclared names in vectors the spec type-checks off, and nested comprehensions, which
 *      the CEL_LIMITS bound refuses);
 *   3. through the policy engine as a custom rule's expression: true → the rule's outcome,
 *      false → allow, eval_error → fail closed (require_approval, the error in decision_reason).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { run as celRun, isCelError } from "@bufbuild/cel";
import { describe, expect, it } from "vitest";
import { celBindings, compileExpression, evaluateExpression } from "../../../src/policy/cel.js";
import { run } from "./helpers.js";

interface Vector {
  id: string;
  expr: string;
  expect: true | false | "eval_error";
  disable_check?: boolean;
}
const data = JSON.parse(
  readFileSync(path.join(import.meta.dirname, "fixtures/cel-conformance.json"), "utf8"),
) as { vectors: Vector[]; time_vectors: Vector[] };
const all = [...data.vectors, ...data.time_vectors];

/** Vectors the wrapper refuses at write time, and why. */
const REFUSED: Record<string, RegExp> = {
  "basic/variables/self_eval_unbound_lookup": /undeclared reference to 'x'/,
  "basic/functions/unbound": /undeclared reference to function 'f_unknown'/,
  "basic/functions/unbound_is_runtime_error": /undeclared reference to function 'f_unknown'/,
  "conversions/type/dyn_no_denotation": /undeclared reference to 'dyn'/,
  "macros/nested/filter_all": /comprehension .* inside another one/,
  "macros/nested/all_all": /comprehension .* inside another one/,
};

const bindings = celBindings({
  action: { agent_name: "a", action_type: "tool_call", action_name: "n", payload: {} },
  destinationDomains: [],
  identity: null,
  chain: { event_count: 0, financial_exposure_usd: 0, started_at_ms: 0 },
  nowMs: 0,
});

describe("CEL conformance vectors", () => {
  it("has the 297 core and 20 timestamp vectors", () => {
    expect(data.vectors).toHaveLength(297);
    expect(data.time_vectors).toHaveLength(20);
  });

  it("the library (@bufbuild/cel) evaluates every vector as the specification says", () => {
    const failed = all.filter((v) => {
      const r = celRun(v.expr, {});
      const got = isCelError(r) ? "eval_error" : r;
      return got !== v.expect;
    });
    expect(failed.map((v) => v.id)).toEqual([]);
  });

  it("Tollgate's compile/evaluate wrapper agrees on every vector it accepts, and refuses only the listed ones", () => {
    const refused: string[] = [];
    const failed: string[] = [];
    for (const v of all) {
      const compiled = compileExpression(v.expr);
      if (!compiled.ok) {
        refused.push(v.id);
        const why = REFUSED[v.id];
        if (why === undefined || !why.test(compiled.error.message))
          failed.push(`${v.id}: ${compiled.error.message}`);
        // a refusal names the position
        expect(compiled.error.message).toMatch(/at line 1, column \d+$/);
        continue;
      }
      const r = evaluateExpression(compiled.program, bindings);
      const got = r.ok ? r.value : "eval_error";
      if (got !== v.expect) failed.push(`${v.id}: got ${got}, want ${v.expect}`);
    }
    expect(failed).toEqual([]);
    expect(refused.sort()).toEqual(Object.keys(REFUSED).sort());
    expect(all.length - refused.length).toBe(311);
  });

  it("the engine applies a vector's rule when true, allows when false, fails closed on an evaluation error", () => {
    const failed: string[] = [];
    for (const v of all) {
      if (REFUSED[v.id]) continue;
      const { decision } = run({
        config: {
          custom_rules: [
            { name: "v", match: {}, expression: v.expr, outcome: "require_approval", reason: "vector" },
          ],
        },
      });
      const ok =
        v.expect === true
          ? decision.policy_decision === "require_approval" &&
            decision.policy_name === "v" &&
            decision.decision_reason === "vector"
          : v.expect === false
            ? decision.policy_decision === "allow" && decision.policy_name === null
            : decision.policy_decision === "require_approval" &&
              decision.policy_name === "v" &&
              decision.decision_reason.startsWith("Custom rule v: the CEL expression could not be evaluated");
      if (!ok) failed.push(`${v.id}: ${JSON.stringify(decision)}`);
    }
    expect(failed).toEqual([]);
  });
});
