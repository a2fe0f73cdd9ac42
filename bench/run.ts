/**
 * `npm run bench`: runs every benchmark in bench/ (each starts and stops its own real parts),
 * then writes bench/results/summary.md and summary.json from their result files. Pass --quick
 * for a small correctness run.
 *
 *   npm run bench [-- --quick] [-- --only record-action,sidecar-overhead]
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { markdownTable, type ResultRow } from "./lib/stats.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: { quick: { type: "boolean", default: false }, only: { type: "string" } },
});
const all = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(here, d.name, "run.ts")))
  .map((d) => d.name)
  .sort();
const selected = values.only ? values.only.split(",") : all;
let failed = 0;
for (const name of selected) {
  process.stderr.write(`\n== bench/${name}\n`);
  const r = spawnSync(
    process.execPath,
    ["--import", "tsx", path.join(here, name, "run.ts"), ...(values.quick ? ["--quick"] : [])],
    {
      stdio: "inherit",
    },
  );
  if (r.status !== 0) {
    failed++;
    process.stderr.write(`bench/${name} failed with exit code ${r.status}\n`);
  }
}
const rows: ResultRow[] = [];
for (const name of selected) {
  const file = path.join(here, "results", `${name}.json`);
  if (existsSync(file)) rows.push(...(JSON.parse(readFileSync(file, "utf8")).rows as ResultRow[]));
}
const md = markdownTable(rows);
writeFileSync(path.join(here, "results", "summary.md"), `${md}\n`);
writeFileSync(path.join(here, "results", "summary.json"), `${JSON.stringify({ rows }, null, 2)}\n`);
process.stdout.write(`\n${md}\n`);
process.exit(failed ? 1 : 0);
