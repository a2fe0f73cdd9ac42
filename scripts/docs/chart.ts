/** The Helm chart's values reference, from values.schema.json and values.yaml (scripts/gen-chart-docs.ts). */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { ChartSchema, valuesRows, valuesTable } from "../gen-chart-docs.js";
import { generatedHeader } from "./markdown.js";

export function chartMarkdown(chartDir: string): string {
  const schema = ChartSchema.parse(
    JSON.parse(readFileSync(path.join(chartDir, "values.schema.json"), "utf8")),
  );
  const values: unknown = parseYaml(readFileSync(path.join(chartDir, "values.yaml"), "utf8"));
  const chart = parseYaml(readFileSync(path.join(chartDir, "Chart.yaml"), "utf8")) as {
    name: string;
    version: string;
    appVersion?: string;
    kubeVersion?: string;
  };
  const rows = valuesRows(schema, values);
  return `${generatedHeader("Helm chart values", "`charts/tollgate/values.schema.json` and `values.yaml`")}
Chart \`${chart.name}\` ${chart.version}${chart.appVersion ? ` (app ${chart.appVersion})` : ""}${chart.kubeVersion ? `, Kubernetes ${chart.kubeVersion}` : ""}: ${rows.length} values. The schema is strict: an unknown key fails the install. How to install and upgrade: [Install](../operations/install.md).

${valuesTable(rows)}`;
}
