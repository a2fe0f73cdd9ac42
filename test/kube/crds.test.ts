import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type KubeEnv, root, startKubeEnv, waitFor } from "./helpers.js";

const org = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "tollgate.dev/v1alpha1",
  kind: "Organization",
  metadata: { name },
  spec,
});
const policy = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "tollgate.dev/v1alpha1",
  kind: "GovernancePolicy",
  metadata: { name, namespace: "acme-agents" },
  spec: { organizationRef: { name: "acme" }, ...spec },
});
const team = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "tollgate.dev/v1alpha1",
  kind: "ApproverTeam",
  metadata: { name, namespace: "acme-agents" },
  spec: { organizationRef: { name: "acme" }, ...spec },
});

describe("CRDs on a real API server", () => {
  let env: KubeEnv;
  beforeAll(async () => {
    env = await startKubeEnv();
  });
  afterAll(async () => env?.stop());

  it("installs the three kinds with short names and the tollgate category", async () => {
    const resources = await env.k(["api-resources", "--api-group=tollgate.dev", "-o", "wide"]);
    expect(resources).toMatch(/organizations\s+tgorg\s+tollgate\.dev\/v1alpha1\s+false\s+Organization/);
    expect(resources).toMatch(
      /governancepolicies\s+tgpol,gpol\s+tollgate\.dev\/v1alpha1\s+true\s+GovernancePolicy/,
    );
    expect(resources).toMatch(/approverteams\s+tgteam\s+tollgate\.dev\/v1alpha1\s+true\s+ApproverTeam/);
    // The OpenAPI document is published shortly after the CRD is established.
    const explained = await waitFor("kubectl explain", async () => {
      const r = await env.kTry(["explain", "governancepolicy.spec.thresholds.financialDenyUsd"]);
      return r.code === 0 && r.stdout;
    });
    expect(explained).toContain("A single amount above this is denied outright (USD).");
  });

  it("accepts the examples and shows them with Ready/Synced/Age columns", async () => {
    const out = await env.k(["apply", "-f", path.join(root, "examples")]);
    expect(out).toContain("namespace/acme-agents created");
    expect(out).toContain("organization.tollgate.dev/acme created");
    expect(out).toContain("governancepolicy.tollgate.dev/payments created");
    expect(out).toContain("approverteam.tollgate.dev/finance created");
    const listed = await env.k(["get", "tollgate", "-A"]);
    expect(listed).toMatch(/NAME\s+SLUG\s+MODE\s+READY\s+SYNCED\s+AGE/);
    expect(listed).toMatch(/NAMESPACE\s+NAME\s+ORGANIZATION\s+READY\s+SYNCED\s+AGE/);
    expect(listed).toContain("governancepolicy.tollgate.dev/payments");
    // Defaults from the schema are applied by the API server.
    const stored = JSON.parse(await env.k(["get", "tgteam", "finance", "-n", "acme-agents", "-o", "json"]));
    expect(stored.spec.approvers[1]).toEqual({ email: "controller@acme.example", role: "approver" });
  });

  it.each([
    [
      "an active kill switch without a reason",
      org("bad-ks", { slug: "bad-ks", killSwitch: { active: true } }),
      "spec.killSwitch.reason: Required value: reason is required when the kill switch is active",
    ],
    ["an uppercase slug", org("bad-slug", { slug: "Bad_Slug" }), 'spec.slug: Invalid value: "Bad_Slug"'],
    [
      "an unknown evaluation mode",
      org("bad-mode", { slug: "m", evaluationMode: "audit" }),
      'spec.evaluationMode: Unsupported value: "audit"',
    ],
    [
      "a zero approval timeout",
      org("bad-timeout", { slug: "t", approvalTimeoutHours: 0 }),
      "spec.approvalTimeoutHours: Invalid value: 0",
    ],
    ["a missing slug", org("no-slug", {}), "spec.slug: Required value"],
    [
      "a deny threshold below the approval threshold",
      policy("bad-thresholds", { thresholds: { financialApprovalUsd: 100, financialDenyUsd: 5 } }),
      "spec.thresholds.financialDenyUsd: Invalid value",
    ],
    [
      "a deny rule without a reason",
      policy("bad-rule", { customRules: [{ name: "r", match: { actionName: "x" }, outcome: "deny" }] }),
      "spec.customRules[0].reason: Required value: reason is required unless outcome is allow",
    ],
    [
      "an unknown rule outcome",
      policy("bad-outcome", { customRules: [{ name: "r", match: { actionName: "x" }, outcome: "maybe" }] }),
      'spec.customRules[0].outcome: Unsupported value: "maybe"',
    ],
    [
      "a docsUrl that is not a URL",
      policy("bad-url", {
        customRules: [{ name: "r", match: { actionName: "x" }, outcome: "allow", docsUrl: "no url" }],
      }),
      "spec.customRules[0].docsUrl: Invalid value",
    ],
    [
      "a replay window over 31 days",
      policy("bad-window", { replay: { window: "745h" } }),
      'spec.replay.window: Invalid value: "745h": window must be more than 0s and at most 744h (31 days)',
    ],
    [
      "a replay window that is not a duration",
      policy("bad-duration", { replay: { window: "1d" } }),
      'spec.replay.window: Invalid value: "1d"',
    ],
    [
      "duplicate rule names",
      policy("dup-rules", {
        customRules: [
          { name: "r", match: { actionName: "x" }, outcome: "allow" },
          { name: "r", match: { actionName: "y" }, outcome: "allow" },
        ],
      }),
      "spec.customRules[1]: Duplicate value",
    ],
    [
      "an uppercase domain",
      policy("bad-domain", { externalDomainsAllowlist: ["API.EXAMPLE.COM"] }),
      "spec.externalDomainsAllowlist[0]: Invalid value",
    ],
    [
      "a non-integer bulk threshold",
      policy("bad-bulk", { thresholds: { bulkDeletion: 2.5 } }),
      "spec.thresholds.bulkDeletion: Invalid value",
    ],
    ["an unknown field", policy("bad-field", { thresholdz: {} }), 'unknown field "spec.thresholdz"'],
    [
      "an approver with a bad email",
      team("bad-email", { approvers: [{ email: "nope" }] }),
      "spec.approvers[0].email: Invalid value",
    ],
    [
      "an approver with an unknown role",
      team("bad-role", { approvers: [{ email: "a@x.io", role: "boss" }] }),
      'spec.approvers[0].role: Unsupported value: "boss"',
    ],
    [
      "a team without approvers",
      team("empty-team", {}),
      "spec.approvers: Required value: at least one approver or fallback approver is required",
    ],
    [
      "a fallback approver who is also an approver",
      team("overlap", { approvers: [{ email: "a@x.io" }], fallbackApprovers: ["A@x.io"] }),
      "spec.fallbackApprovers: Invalid value",
    ],
  ])("rejects %s, naming the field", async (_what, obj, message) => {
    const r = await env.kTry(["apply", "-f", "-"], JSON.stringify(obj));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it("rejects changing a slug or an organizationRef (immutable)", async () => {
    const slug = await env.kTry([
      "patch",
      "organization",
      "acme",
      "--type=merge",
      "-p",
      '{"spec":{"slug":"other"}}',
    ]);
    expect(slug.code).not.toBe(0);
    expect(slug.stderr).toContain("spec.slug: Invalid value");
    expect(slug.stderr).toContain("slug is immutable");
    const ref = await env.kTry([
      "patch",
      "governancepolicy",
      "payments",
      "-n",
      "acme-agents",
      "--type=merge",
      "-p",
      '{"spec":{"organizationRef":{"name":"other"}}}',
    ]);
    expect(ref.code).not.toBe(0);
    expect(ref.stderr).toContain("spec.organizationRef: Invalid value");
    expect(ref.stderr).toContain("organizationRef is immutable");
  });
});
