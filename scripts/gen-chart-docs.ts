/**
 * Writes the values table of charts/tollgate/README.md (between the markers
 * `<!-- values-table:start -->` and `<!-- values-table:end -->`) from the chart's
 * values.schema.json (key, type, description, allowed values, range) and values.yaml (defaults):
 * `npm run gen:chart-docs`. `--check` writes nothing and exits 1 when the README is out of date
 * (test/unit/chart/docs.test.ts checks the same).
 *
 * One row per documented leaf: a schema node with `properties` is walked into, every other node
 * (scalars, lists, free-form maps, `$ref`s such as resources) is a row. A leaf without a
 * description fails the generation, so the schema stays documented field by field.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

/** The part of a JSON Schema (draft-07) node the table reads. */
export interface SchemaNode {
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  $ref?: string;
  properties?: Record<string, SchemaNode>;
}

const SchemaNodeSchema: z.ZodType<SchemaNode> = z.lazy(() =>
  z.looseObject({
    type: z.union([z.string(), z.array(z.string())]).optional(),
    description: z.string().optional(),
    enum: z.array(z.unknown()).optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    $ref: z.string().optional(),
    properties: z.record(z.string(), SchemaNodeSchema).optional(),
  }),
);

/** A values.schema.json: the root node and its definitions (targets of `#/definitions/<name>`). */
export const ChartSchema = z.looseObject({
  properties: z.record(z.string(), SchemaNodeSchema),
  definitions: z.record(z.string(), SchemaNodeSchema).optional(),
});
export type ChartSchema = z.infer<typeof ChartSchema>;

/** One row of the values table. */
export interface ValueRow {
  key: string;
  type: string;
  /** The value in values.yaml as compact JSON; undefined when values.yaml leaves the key out. */
  default: string | undefined;
  description: string;
}

export const START_MARKER = "<!-- values-table:start -->";
export const END_MARKER = "<!-- values-table:end -->";

/** The node a `$ref` points at (`#/definitions/<name>`); throws for any other reference. */
function resolve(schema: ChartSchema, node: SchemaNode): SchemaNode {
  if (!node.$ref) return node;
  const name = /^#\/definitions\/([^/]+)$/.exec(node.$ref)?.[1];
  const target = name ? schema.definitions?.[name] : undefined;
  if (!target) throw new Error(`unresolvable $ref ${node.$ref}`);
  return target;
}

/** The type cell: the schema's type(s), e.g. `integer \| string \| null`. */
export function typeOf(node: SchemaNode): string {
  const t = node.type ?? (node.properties ? "object" : "any");
  return Array.isArray(t) ? t.join(" | ") : t;
}

/** The description cell: the node's description, then its allowed values and range. */
export function describe(node: SchemaNode, target: SchemaNode): string {
  const parts = [node.description ?? target.description ?? ""];
  const allowed = node.enum ?? target.enum;
  if (allowed) parts.push(`One of ${allowed.map((v) => `\`${JSON.stringify(v)}\``).join(", ")}.`);
  const min = node.minimum ?? target.minimum;
  const max = node.maximum ?? target.maximum;
  if (min !== undefined && max !== undefined) parts.push(`Range ${min}–${max}.`);
  else if (min !== undefined) parts.push(`At least ${min}.`);
  else if (max !== undefined) parts.push(`At most ${max}.`);
  return parts.join(" ").trim();
}

/** The value at a dotted path of values.yaml, or undefined. */
function valueAt(values: unknown, keys: string[]): unknown {
  let v = values;
  for (const k of keys) {
    if (v === null || typeof v !== "object" || !(k in v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/**
 * The rows of the table, in schema order. Throws when a leaf has no description (in the node or
 * in the definition it references).
 */
export function valuesRows(schema: ChartSchema, values: unknown): ValueRow[] {
  const rows: ValueRow[] = [];
  const walk = (node: SchemaNode, keys: string[]) => {
    if (node.properties && !node.$ref) {
      for (const [k, child] of Object.entries(node.properties)) walk(child, [...keys, k]);
      return;
    }
    const key = keys.join(".");
    const target = resolve(schema, node);
    const description = describe(node, target);
    if (!(node.description ?? target.description))
      throw new Error(`values.schema.json: ${key} has no description`);
    const value = valueAt(values, keys);
    rows.push({
      key,
      type: typeOf(target),
      default: value === undefined ? undefined : JSON.stringify(value),
      description,
    });
  };
  for (const [k, child] of Object.entries(schema.properties)) walk(child, [k]);
  return rows;
}

/** A Markdown table cell: pipes and angle brackets escaped, no line breaks. */
export const cell = (s: string) =>
  s
    .replace(/\|/g, "\\|")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/\s*\n\s*/g, " ");
/**
 * Inline code in a table cell (GitHub reads `\|` as a pipe even inside code; entities would show
 * literally there, so angle brackets stay as they are).
 */
export const code = (s: string) => {
  const text = s.replace(/\|/g, "\\|").replace(/\n/g, " ");
  return text.includes("`") ? `\`\` ${text} \`\`` : `\`${text}\``;
};

/** The Markdown table of `rows`. */
export function valuesTable(rows: ValueRow[]): string {
  const lines = [
    "| key | type | default | description |",
    "| --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| \`${r.key}\` | ${cell(r.type)} | ${r.default === undefined ? "" : code(r.default)} | ${cell(r.description)} |`,
    ),
  ];
  return `${lines.join("\n")}\n`;
}

/** `readme` with the text between the markers replaced by `table`; throws when a marker is missing. */
export function replaceTable(readme: string, table: string): string {
  const start = readme.indexOf(START_MARKER);
  const end = readme.indexOf(END_MARKER);
  if (start < 0 || end < start) throw new Error(`README: markers ${START_MARKER} … ${END_MARKER} not found`);
  return `${readme.slice(0, start + START_MARKER.length)}\n${table}${readme.slice(end)}`;
}

/** The chart README as it should be, from the chart folder's schema, values and README. */
export function renderChartReadme(chartDir: string): { current: string; wanted: string } {
  const schema = ChartSchema.parse(
    JSON.parse(readFileSync(path.join(chartDir, "values.schema.json"), "utf8")),
  );
  const values: unknown = parseYaml(readFileSync(path.join(chartDir, "values.yaml"), "utf8"));
  const current = readFileSync(path.join(chartDir, "README.md"), "utf8");
  return { current, wanted: replaceTable(current, valuesTable(valuesRows(schema, values))) };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The chart this repository ships. */
export const CHART_DIR = path.join(root, "charts/tollgate");

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const { current, wanted } = renderChartReadme(CHART_DIR);
  if (current === wanted) {
    console.log("charts/tollgate/README.md is up to date");
  } else if (process.argv.includes("--check")) {
    console.error("charts/tollgate/README.md values table is out of date: run npm run gen:chart-docs");
    process.exit(1);
  } else {
    writeFileSync(path.join(CHART_DIR, "README.md"), wanted);
    console.log("wrote charts/tollgate/README.md");
  }
}
