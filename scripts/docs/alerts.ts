/**
 * The alert listing (docs/reference/alerts.md) from charts/tollgate/files/alerts.yaml, the rule
 * file the chart's PrometheusRule ships: one table row per alert (severity, `for`, summary, runbook
 * link) and each expression verbatim.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { generatedHeader, table } from "./markdown.js";

const RuleFile = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(
        z.object({
          alert: z.string(),
          expr: z.string(),
          for: z.string().optional(),
          labels: z.object({ severity: z.string() }),
          annotations: z.object({ summary: z.string() }),
        }),
      ),
    }),
  ),
});

/** The Markdown page; throws (zod) when the rule file does not have the expected shape. */
export function alertsMarkdown(root: string): string {
  const file = RuleFile.parse(
    parseYaml(readFileSync(path.join(root, "charts/tollgate/files/alerts.yaml"), "utf8")),
  );
  const parts = [
    generatedHeader("Alerts", "`charts/tollgate/files/alerts.yaml`"),
    "The rules the chart ships as a PrometheusRule with `alerts.enabled` (tested with `promtool test rules`). What each one means and what to do: [Alerts and runbooks](../operations/alerts.md).\n",
  ];
  for (const g of file.groups) {
    parts.push(`## Group \`${g.name}\`\n`);
    parts.push(
      table(
        ["alert", "severity", "for", "summary", "runbook"],
        g.rules.map((r) => [
          `\`${r.alert}\``,
          r.labels.severity,
          r.for ?? "—",
          r.annotations.summary.replace(/\{\{[^}]*\}\}/g, "…"),
          `[runbook](../operations/alerts.md#${r.alert.toLowerCase()})`,
        ]),
      ),
    );
    parts.push("");
    for (const r of g.rules) parts.push(`**${r.alert}**\n\n\`\`\`\n${r.expr.trim()}\n\`\`\`\n`);
  }
  return `${parts.join("\n")}`;
}
