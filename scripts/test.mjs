#!/usr/bin/env node
// The test command (`npm test`): runs every vitest project and ends with one plain summary line
// "N passed, N failed" (plus skipped) that any CI can read. Exit code is vitest's.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";

mkdirSync("test-artifacts", { recursive: true });
const report = "test-artifacts/vitest-report.json";
const run = spawnSync(
  "npx",
  ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
let summary = "0 passed, 0 failed";
try {
  const r = JSON.parse(readFileSync(report, "utf8"));
  const skipped = r.numPendingTests + r.numTodoTests;
  summary = `${r.numPassedTests} passed, ${r.numFailedTests + (r.numFailedTestSuites && !r.numFailedTests ? 1 : 0)} failed${skipped ? `, ${skipped} skipped` : ""}`;
} catch {
  summary = "0 passed, 1 failed";
}
console.log(`\n${summary}`);
process.exit(run.status ?? 1);
