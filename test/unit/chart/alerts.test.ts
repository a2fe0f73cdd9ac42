/**
 * The alerting rules the chart ships (charts/tollgate/files/alerts.yaml, the one source the
 * PrometheusRule template includes): `promtool check rules` validates them, `promtool test rules`
 * runs alerts.promtest.yaml (real input series → the alerts expected to fire, with their labels
 * and rendered annotations, and expected not to fire) against exactly that file. Also: every
 * alert has a firing and a not-firing case, the expressions use only metric names the components
 * export, and every alert links a runbook section that exists. Fails when promtool is missing.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { createOperatorMetrics } from "../../../operator/metrics.js";
import { createMetrics as createSidecarMetrics } from "../../../sidecar/metrics.js";
import type { Database } from "../../../src/service/db/pool.js";
import { createMetrics as createServiceMetrics } from "../../../src/service/metrics.js";
import { promtool } from "../../support/promtool.js";

const root = path.resolve(import.meta.dirname, "../../..");
const rulesFile = path.join(root, "charts/tollgate/files/alerts.yaml");
const testFile = path.join(import.meta.dirname, "alerts.promtest.yaml");
const runbook = path.join(root, "docs/operations/alerts.md");
const RUNBOOK_BASE = "https://github.com/tollgate/tollgate/blob/main/docs/operations/alerts.md";

const Rule = z.strictObject({
  alert: z.string().regex(/^Tollgate[A-Z][A-Za-z]+$/),
  expr: z.string(),
  for: z.string().optional(),
  labels: z.strictObject({ severity: z.enum(["critical", "warning"]) }),
  annotations: z.strictObject({ summary: z.string(), description: z.string(), runbook_url: z.string() }),
});
const RuleFile = z.strictObject({
  groups: z.array(z.strictObject({ name: z.string(), rules: z.array(Rule) })),
});
const PromTest = z.looseObject({
  rule_files: z.array(z.string()),
  tests: z.array(
    z.looseObject({
      alert_rule_test: z.array(
        z.looseObject({ eval_time: z.string(), alertname: z.string(), exp_alerts: z.array(z.unknown()) }),
      ),
    }),
  ),
});

const rules = RuleFile.parse(parseYaml(readFileSync(rulesFile, "utf8"))).groups.flatMap((g) => g.rules);
const alertNames = rules.map((r) => r.alert);
const tmp = mkdtempSync(path.join(tmpdir(), "tollgate-alerts-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("charts/tollgate/files/alerts.yaml", () => {
  it("is valid for promtool check rules", () => {
    const r = promtool(["check", "rules", rulesFile]);
    expect(r, r.output).toMatchObject({ code: 0 });
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
  });

  it("passes promtool test rules: series in, the expected alerts out", () => {
    const r = promtool(["test", "rules", testFile]);
    expect(r.output).toContain("SUCCESS");
    expect(r.code, r.output).toBe(0);
  });

  it("the promtool test runs the shipped file and covers every alert firing and not firing", () => {
    const t = PromTest.parse(parseYaml(readFileSync(testFile, "utf8")));
    expect(t.rule_files.map((f) => path.resolve(path.dirname(testFile), f))).toEqual([rulesFile]);
    const cases = t.tests.flatMap((x) => x.alert_rule_test);
    for (const c of cases)
      expect(alertNames, `test case for unknown alert ${c.alertname}`).toContain(c.alertname);
    for (const name of alertNames) {
      const mine = cases.filter((c) => c.alertname === name);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${name} has no case where it fires`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${name} has no case where it does not fire`,
      ).toBe(true);
    }
  });

  it("a changed threshold fails the promtool test (the test exercises the rules)", () => {
    const text = readFileSync(rulesFile, "utf8");
    const loosened = text.replace("> 0.01\n", "> 0.05\n");
    expect(loosened).not.toBe(text);
    writeFileSync(path.join(tmp, "alerts.yaml"), loosened);
    const t = parseYaml(readFileSync(testFile, "utf8"));
    t.rule_files = [path.join(tmp, "alerts.yaml")];
    writeFileSync(path.join(tmp, "test.yaml"), JSON.stringify(t));
    const r = promtool(["test", "rules", path.join(tmp, "test.yaml")]);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain("alertname: TollgateServiceErrorRate");
    expect(r.output).not.toContain("alertname: TollgateDecisionLatencyHigh");
  });

  it("uses only metric names the service, sidecar and operator export (and Prometheus's up)", () => {
    const noDb = {} as Database; // gauges query only when scraped
    const registries = [
      createServiceMetrics(noDb, { defaultMetrics: false }).registry,
      createSidecarMetrics({ defaultMetrics: false }).registry,
      createOperatorMetrics({ defaultMetrics: false }).registry,
    ];
    const exported = new Set(["up"]);
    for (const reg of registries) {
      for (const m of reg.getMetricsAsArray()) {
        exported.add(m.name);
        if (String(m.type) === "histogram")
          for (const s of ["_bucket", "_count", "_sum"]) exported.add(m.name + s);
      }
    }
    const used = new Set(rules.flatMap((r) => metricNames(r.expr)));
    expect([...used].sort()).toContain("tollgate_sidecar_fail_mode_total");
    for (const name of used) expect(exported, `${name} is not exported by any component`).toContain(name);
  });

  it("reads metric names out of PromQL (functions, label lists, matchers and ranges are not names)", () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (namespace, le) (rate(a_bucket{x="y{z}"}[5m]))) > 4 * 3600 and on (job) b',
      ),
    ).toEqual(["a_bucket", "b"]);
    expect(metricNames("absent(tollgate_service_build_info)")).toEqual(["tollgate_service_build_info"]);
  });

  it("every alert has a severity, a summary, and a runbook_url to its section of docs/operations/alerts.md", () => {
    const doc = readFileSync(runbook, "utf8");
    const sections = [...doc.matchAll(/^## (Tollgate\w+)$/gm)].map((m) => m[1]);
    expect(new Set(alertNames).size).toBe(alertNames.length);
    expect(sections.sort()).toEqual([...alertNames].sort());
    for (const r of rules)
      expect(r.annotations.runbook_url, r.alert).toBe(`${RUNBOOK_BASE}#${r.alert.toLowerCase()}`);
  });

  it("fails, naming the package, when promtool is not installed", () => {
    expect(() => promtool(["--version"], { env: { PATH: tmp } })).toThrow(/promtool is required/);
  });
});

/** Metric names in a PromQL expression: identifiers outside strings, matchers, ranges and label lists, not called. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const keywords = new Set(["and", "or", "unless", "bool", "offset"]);
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .filter((m) => !/^\s*\(/.test(bare.slice(m.index + m[0].length)))
    .map((m) => m[0])
    .filter((n) => !keywords.has(n));
}
