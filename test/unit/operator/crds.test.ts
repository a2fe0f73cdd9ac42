import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { CrdSchemaError, crdFor, renderCrds, toStructural } from "../../../operator/crds/generate.js";
import {
  ApproverTeamSpecSchema,
  GovernancePolicySpecSchema,
  KINDS,
  OrganizationSpecSchema,
} from "../../../operator/crds/schema.js";

const root = path.resolve(import.meta.dirname, "../../..");

/** Walks every schema node under properties/items/additionalProperties with its path. */
function* nodes(schema: Record<string, unknown>, at = "$"): Generator<[string, Record<string, unknown>]> {
  yield [at, schema];
  for (const [name, child] of Object.entries(
    (schema.properties as Record<string, Record<string, unknown>>) ?? {},
  )) {
    yield* nodes(child, `${at}.${name}`);
  }
  if (schema.items) yield* nodes(schema.items as Record<string, unknown>, `${at}[]`);
  if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
    yield* nodes(schema.additionalProperties as Record<string, unknown>, `${at}.*`);
  }
}

describe("generated CRDs", () => {
  it("crds/*.yaml match the zod schemas (run npm run gen:crds after changing them)", async () => {
    const files = (await readdir(path.join(root, "crds"))).filter((f) => f.endsWith(".yaml")).sort();
    const rendered = renderCrds();
    expect(files).toEqual(rendered.map((r) => r.file).sort());
    for (const { file, yaml } of rendered) {
      expect(await readFile(path.join(root, "crds", file), "utf8"), `crds/${file} drifted`).toBe(yaml);
    }
  });

  it.each(Object.values(KINDS))(
    "$kind is a structural schema with status, printer columns and names",
    (def) => {
      const crd = crdFor(def) as any;
      const version = crd.spec.versions[0];
      expect(crd.metadata.name).toBe(`${def.plural}.tollgate.dev`);
      expect(crd.spec.names.categories).toEqual(["tollgate"]);
      expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(crd.spec.scope).toBe(def.scope);
      expect(version.subresources).toEqual({ status: {} });
      expect(version.additionalPrinterColumns.map((c: { name: string }) => c.name).slice(-3)).toEqual([
        "Ready",
        "Synced",
        "Age",
      ]);
      const root = version.schema.openAPIV3Schema;
      for (const [at, node] of nodes(root)) {
        const preserved = node["x-kubernetes-preserve-unknown-fields"] === true;
        expect(typeof node.type === "string" || preserved, `${at} has a type`).toBe(true);
        expect(node.additionalProperties, `${at} additionalProperties`).not.toBe(false);
        expect(node.$ref, `${at} $ref`).toBeUndefined();
        expect(node.anyOf, `${at} anyOf`).toBeUndefined();
        if (node.properties) expect(node.additionalProperties, `${at} mixes properties`).toBeUndefined();
        if (node.format) expect(node.pattern, `${at} format and pattern`).toBeUndefined();
      }
    },
  );

  it("carries the cross-field CEL rules, enums, formats and minimums", () => {
    const crds = renderCrds().map((r) => parseYaml(r.yaml));
    const spec = (kind: string) =>
      crds.find((c) => c.spec.names.kind === kind).spec.versions[0].schema.openAPIV3Schema.properties.spec;
    const org = spec("Organization");
    expect(org.properties.killSwitch["x-kubernetes-validations"][0]).toMatchObject({
      rule: "!self.active || has(self.reason)",
      fieldPath: ".reason",
    });
    expect(org.properties.slug["x-kubernetes-validations"][0].rule).toBe("self == oldSelf");
    expect(org.properties.evaluationMode.enum).toEqual(["enforce", "shadow"]);
    expect(org.properties.approvalTimeoutHours).toMatchObject({ minimum: 0, exclusiveMinimum: true });
    const pol = spec("GovernancePolicy");
    expect(pol.properties.thresholds["x-kubernetes-validations"][0].fieldPath).toBe(".financialDenyUsd");
    expect(pol.properties.customRules.items.properties.docsUrl.format).toBe("uri");
    expect(pol.properties.customRules.items.properties.outcome.enum).toHaveLength(4);
    expect(pol.properties.customRules["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    expect(pol.properties.customRules.items.properties.match.properties.payload.additionalProperties).toEqual(
      {
        "x-kubernetes-preserve-unknown-fields": true,
        description: expect.any(String),
      },
    );
    const team = spec("ApproverTeam");
    expect(team.properties.approvers.items.properties.email.format).toBe("email");
    expect(team["x-kubernetes-validations"]).toHaveLength(2);
  });

  it("refuses schemas that cannot be structural, naming the path", () => {
    const json = z.toJSONSchema(z.object({ a: z.object({ u: z.union([z.string(), z.number()]) }) }), {
      target: "openapi-3.0",
    });
    expect(() => toStructural(json as Record<string, unknown>)).toThrowError(CrdSchemaError);
    expect(() => toStructural(json as Record<string, unknown>)).toThrowError(/\$\.a\.u: unions/);
  });
});

describe("CRD zod schemas", () => {
  const example = async (file: string) =>
    parseYaml(await readFile(path.join(root, "examples", file), "utf8"));

  it("accept the examples", async () => {
    expect(OrganizationSpecSchema.parse((await example("10-organization.yaml")).spec).slug).toBe("acme");
    expect(
      GovernancePolicySpecSchema.parse((await example("20-governancepolicy.yaml")).spec).customRules,
    ).toHaveLength(5);
    expect(
      ApproverTeamSpecSchema.parse((await example("30-approverteam.yaml")).spec).approvers[1]!.role,
    ).toBe("approver");
  });

  it.each([
    [
      "an active kill switch without reason",
      OrganizationSpecSchema,
      { slug: "a", killSwitch: { active: true } },
      "killSwitch.reason",
    ],
    ["an uppercase slug", OrganizationSpecSchema, { slug: "Acme" }, "slug"],
    [
      "an unknown evaluation mode",
      OrganizationSpecSchema,
      { slug: "a", evaluationMode: "audit" },
      "evaluationMode",
    ],
    [
      "a zero approval timeout",
      OrganizationSpecSchema,
      { slug: "a", approvalTimeoutHours: 0 },
      "approvalTimeoutHours",
    ],
    [
      "a deny threshold below the approval threshold",
      GovernancePolicySpecSchema,
      { organizationRef: { name: "a" }, thresholds: { financialApprovalUsd: 100, financialDenyUsd: 50 } },
      "thresholds.financialDenyUsd",
    ],
    [
      "a deny rule without reason",
      GovernancePolicySpecSchema,
      {
        organizationRef: { name: "a" },
        customRules: [{ name: "r", match: { actionName: "x" }, outcome: "deny" }],
      },
      "customRules.0.reason",
    ],
    [
      "a rule with an empty match",
      GovernancePolicySpecSchema,
      { organizationRef: { name: "a" }, customRules: [{ name: "r", match: {}, outcome: "allow" }] },
      "customRules.0.match",
    ],
    [
      "an invalid payload condition",
      GovernancePolicySpecSchema,
      {
        organizationRef: { name: "a" },
        customRules: [{ name: "r", match: { payload: { n: { between: [1, 2] } } }, outcome: "allow" }],
      },
      "customRules.0.match.payload.n",
    ],
    [
      "a bad email",
      ApproverTeamSpecSchema,
      { organizationRef: { name: "a" }, approvers: [{ email: "nope" }] },
      "approvers.0.email",
    ],
    ["an empty team", ApproverTeamSpecSchema, { organizationRef: { name: "a" } }, "approvers"],
    [
      "a fallback approver who is also an approver",
      ApproverTeamSpecSchema,
      { organizationRef: { name: "a" }, approvers: [{ email: "a@x.io" }], fallbackApprovers: ["A@x.io"] },
      "fallbackApprovers",
    ],
  ] as const)("reject %s, naming the field", (_what, schema, spec, field) => {
    const r = (schema as z.ZodType).safeParse(spec);
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join("."))).toContain(field);
  });
});
