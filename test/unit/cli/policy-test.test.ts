/**
 * `tollgate policy test` (issue 28): the examples' fixtures pass; a wrong expectation fails with
 * a diff (exit 1); a bad fixture or policy is exit 2 naming the file and field; --json for machines.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type Io, main } from "../../../src/cli/main.js";

const root = path.resolve(import.meta.dirname, "../../..");

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const io: Io = {
    stdout: (t) => (out += t),
    stderr: (t) => (err += t),
    readStdin: async () => "",
    fetch: globalThis.fetch,
  };
  const code = await main(argv, io);
  return { code, out, err };
}

const policy = `apiVersion: tollgate.dev/v1alpha1
kind: GovernancePolicy
metadata: { name: p, namespace: team }
spec:
  organizationRef: { name: acme }
  customRules:
    - name: only-invoice-agent-pays
      match: { actionName: pay_invoice }
      expression: '!(identity != null && identity.serviceAccount == "team/invoice-agent")'
      outcome: deny
      reason: Only the invoice agent pays
`;

function dir(files: Record<string, string>): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "tg-policy-test-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(d, name), text);
  return d;
}

const pay = "{ agent_name: a, action_type: tool_call, action_name: pay_invoice, payload: {} }";

describe("tollgate policy test", () => {
  it("passes the examples' fixtures (exit 0)", async () => {
    const r = await run("policy", "test", path.join(root, "examples/policy-tests"));
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^PASS: 8 passed, 0 failed$/m);
  });

  it("fails a wrong expectation with a diff of the case (exit 1) and reports it as JSON", async () => {
    const d = dir({
      "p.yaml": policy,
      "t.tollgate-test.yaml": `cases:
  - name: the invoice agent pays
    action: ${pay}
    identity: { namespace: team, service_account: invoice-agent }
    expect: { outcome: allow }
  - name: wrongly expected to pass
    action: ${pay}
    identity: { namespace: team, service_account: mailer }
    expect: { outcome: allow }
`,
    });
    const r = await run("policy", "test", d);
    expect(r.code).toBe(1);
    expect(r.out).toContain("ok    t.tollgate-test.yaml: the invoice agent pays");
    expect(r.out).toContain("FAIL  t.tollgate-test.yaml: wrongly expected to pass");
    expect(r.out).toContain("- expected: allow");
    expect(r.out).toContain("+ actual:   deny (policy only-invoice-agent-pays)");
    const j = await run("policy", "test", d, "--json");
    expect(j.code).toBe(1);
    const report = JSON.parse(j.out);
    expect(report).toMatchObject({ policies: ["team/p"], passed: 1, failed: 1 });
    expect(report.cases[1].actual).toMatchObject({ outcome: "deny", policy_name: "only-invoice-agent-pays" });
  });

  it.each([
    [
      "a fixture with an unknown outcome",
      { "t.tollgate-test.yaml": `cases: [{ name: x, action: ${pay}, expect: { outcome: maybe } }]` },
      /t\.tollgate-test\.yaml: .*expect\.outcome/,
    ],
    [
      "a policy with a bad expression",
      {
        "p.yaml": policy.replace("identity != null", "identity !=="),
        "t.tollgate-test.yaml": `cases: [{ name: x, action: ${pay}, expect: { outcome: deny } }]`,
      },
      /p\.yaml: .*expression/,
    ],
    ["a directory without fixtures", { "p.yaml": policy }, /no \*\.tollgate-test\.yaml file/],
  ])("refuses %s (exit 2, naming the file and field)", async (_what, files, message) => {
    const r = await run("policy", "test", dir(files));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
  });
});
