/**
 * The values table of charts/tollgate/README.md is generated from values.schema.json and
 * values.yaml (scripts/gen-chart-docs.ts, `npm run gen:chart-docs`): this fails when the README is
 * out of date, when a schema field has no description, or when values.yaml leaves a field out.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  CHART_DIR,
  ChartSchema,
  cell,
  code,
  END_MARKER,
  renderChartReadme,
  replaceTable,
  START_MARKER,
  valuesRows,
  valuesTable,
} from "../../../scripts/gen-chart-docs.js";

const schema = ChartSchema.parse(
  JSON.parse(readFileSync(path.join(CHART_DIR, "values.schema.json"), "utf8")),
);
const values: unknown = parseYaml(readFileSync(path.join(CHART_DIR, "values.yaml"), "utf8"));

describe("charts/tollgate/README.md values table", () => {
  it("is up to date (run npm run gen:chart-docs)", () => {
    const { current, wanted } = renderChartReadme(CHART_DIR);
    expect(current, "charts/tollgate/README.md: run npm run gen:chart-docs").toBe(wanted);
  });

  it("documents every field, including the conventional keys users reach for", () => {
    const keys = valuesRows(schema, values).map((r) => r.key);
    for (const key of [
      "service.serviceAccount.create",
      "service.serviceAccount.annotations",
      "operator.serviceAccount.name",
      "service.podLabels",
      "operator.podLabels",
      "ingress.enabled",
      "ingress.className",
      "ingress.hosts",
      "ingress.tls",
      "operator.image.repository",
      "operator.image.tag",
      "operator.image.pullPolicy",
      "sidecar.image.pullPolicy",
      "sidecar.resources",
      "sidecar.nodeOptions",
      "service.nodeOptions",
      "sidecar.ports.grpc",
      "sidecar.ports.http",
      "sidecar.ports.metrics",
      "sidecar.podMonitor.enabled",
      "service.priorityClassName",
      "operator.topologySpreadConstraints",
    ])
      expect(keys).toContain(key);
  });

  it("values.yaml sets every field except those that are off by being absent", () => {
    const absent = valuesRows(schema, values)
      .filter((r) => r.default === undefined)
      .map((r) => r.key);
    // minAvailable: maxUnavailable wins; issuerRef: empty creates a self-signed Issuer.
    expect(absent).toEqual([
      "service.podDisruptionBudget.minAvailable",
      "webhook.certManager.issuerRef.name",
      "webhook.certManager.issuerRef.kind",
      "webhook.certManager.issuerRef.group",
    ]);
  });

  it("a field without a description fails the generation, naming it", () => {
    const bad = ChartSchema.parse({
      properties: { a: { type: "object", properties: { b: { type: "string" } } } },
    });
    expect(() => valuesRows(bad, {})).toThrow("a.b has no description");
  });

  it("takes types and descriptions through $ref, and adds allowed values and ranges", () => {
    const s = ChartSchema.parse({
      definitions: { res: { type: "object", description: "resources" } },
      properties: {
        r: { $ref: "#/definitions/res" },
        p: { type: "integer", description: "port", minimum: 1, maximum: 65535 },
        m: { type: ["string", "null"], description: "mode", enum: ["a", "b"] },
      },
    });
    expect(valuesRows(s, { r: { limits: { memory: "1Gi" } }, p: 80 })).toEqual([
      { key: "r", type: "object", default: '{"limits":{"memory":"1Gi"}}', description: "resources" },
      { key: "p", type: "integer", default: "80", description: "port Range 1–65535." },
      { key: "m", type: "string | null", default: undefined, description: 'mode One of `"a"`, `"b"`.' },
    ]);
    expect(() => valuesRows(ChartSchema.parse({ properties: { x: { $ref: "#/nope" } } }), {})).toThrow(
      "unresolvable $ref",
    );
  });

  it("escapes what would break a Markdown table", () => {
    expect(cell("a | b\n  c <name>")).toBe("a \\| b c &lt;name&gt;");
    expect(code('"x|y"')).toBe('`"x\\|y"`');
    expect(code("`")).toBe("`` ` ``");
    const table = valuesTable([{ key: "k", type: "integer | string", default: undefined, description: "d" }]);
    expect(table.split("\n")[2]).toBe("| `k` | integer \\| string |  | d |");
  });

  it("replaces only the text between the markers, and refuses a README without them", () => {
    const readme = `# x\n${START_MARKER}\nold\n${END_MARKER}\ntail\n`;
    expect(replaceTable(readme, "new\n")).toBe(`# x\n${START_MARKER}\nnew\n${END_MARKER}\ntail\n`);
    expect(() => replaceTable("# x\n", "t")).toThrow(/markers/);
  });
});
