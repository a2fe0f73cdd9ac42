#!/usr/bin/env node
// The test command (`npm test`): runs every vitest project, then the Python SDK's pytest suite
// (python/, in the virtualenv scripts/python-env.sh keeps outside the repo), and ends with one
// plain summary line "N passed, N failed" (plus skipped) over both that any CI can read. Exits
// non-zero when either runner fails.
//
// pytest runs twice, like the service-pglite and service-postgres vitest projects: once against
// a service on embedded PGlite, once on a throwaway real PostgreSQL cluster
// (TOLLGATE_TEST_DATABASE, python/tests/support.py). TOLLGATE_TEST_DATABASE=pglite|postgres
// selects one of them; with TOLLGATE_TEST_URL (a running service) pytest runs once.
//
// Arguments go to vitest (`npm test -- test/sdk`). TOLLGATE_SKIP_PYTHON=1 runs only vitest,
// TOLLGATE_SKIP_VITEST=1 only pytest; PYTEST_ADDOPTS passes options to pytest (`-k langgraph`).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";

mkdirSync("test-artifacts", { recursive: true });
const counts = { passed: 0, failed: 0, skipped: 0 };
let status = 0;

if (process.env.TOLLGATE_SKIP_VITEST !== "1") {
  const report = "test-artifacts/vitest-report.json";
  rmSync(report, { force: true });
  const run = spawnSync(
    "npx",
    ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
    { stdio: "inherit" },
  );
  try {
    const r = JSON.parse(readFileSync(report, "utf8"));
    counts.passed += r.numPassedTests;
    counts.failed += r.numFailedTests + (r.numFailedTestSuites && !r.numFailedTests ? 1 : 0);
    counts.skipped += r.numPendingTests + r.numTodoTests;
  } catch {
    counts.failed += 1;
  }
  if (run.status !== 0) {
    status = run.status ?? 1;
    // A run can fail with every test passing (an error outside the tests, a signal): say so.
    console.error(`vitest exited with ${run.signal ? `signal ${run.signal}` : `status ${run.status}`}`);
  }
}

if (process.env.TOLLGATE_SKIP_PYTHON !== "1") {
  for (const database of pytestDatabases()) {
    const result = runPytest(database);
    counts.passed += result.passed;
    counts.failed += result.failed;
    counts.skipped += result.skipped;
    if (result.status !== 0 && status === 0) status = result.status;
  }
}

console.log(`\n${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ""}`);
process.exit(status);

/**
 * The databases pytest's service runs on, one pytest run each: both by default; the one named by
 * TOLLGATE_TEST_DATABASE; `null` (one run, no choice made here) against TOLLGATE_TEST_URL.
 */
function pytestDatabases() {
  if (process.env.TOLLGATE_TEST_URL) return [null];
  const chosen = process.env.TOLLGATE_TEST_DATABASE;
  return chosen ? [chosen] : ["pglite", "postgres"];
}

/**
 * Runs python/'s pytest suite with its service on `database` ("pglite" or "postgres"; null
 * leaves TOLLGATE_TEST_DATABASE as it is); its counts come from the JUnit XML report.
 */
function runPytest(database) {
  console.log(`\n== Python SDK (pytest${database ? `, service on ${database}` : ""})`);
  const venv = spawnSync("bash", ["scripts/python-env.sh"], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  const python = venv.stdout?.trim().split("\n").pop();
  if (venv.status !== 0 || !python) {
    console.error("scripts/python-env.sh failed: the Python suite did not run");
    return { passed: 0, failed: 1, skipped: 0, status: 1 };
  }
  const report = path.resolve(`test-artifacts/pytest-report${database ? `-${database}` : ""}.xml`);
  rmSync(report, { force: true });
  // The venv's editable link may point at another checkout (the venv is shared): PYTHONPATH makes
  // this checkout's sources win.
  const src = path.resolve("python/src");
  const pythonPath = [src, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  const run = spawnSync(python, ["-m", "pytest", `--junitxml=${report}`, "-o", "junit_family=xunit2"], {
    cwd: "python",
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, PYTHONPATH: pythonPath, ...(database && { TOLLGATE_TEST_DATABASE: database }) },
  });
  const exit = run.status ?? 1;
  try {
    const xml = readFileSync(report, "utf8");
    const suites = [...xml.matchAll(/<testsuite\b([^>]*)>/g)].map((m) => m[1]);
    const attr = (s, name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(s)?.[1] ?? 0);
    let tests = 0;
    let failed = 0;
    let skipped = 0;
    for (const s of suites) {
      tests += attr(s, "tests");
      failed += attr(s, "failures") + attr(s, "errors");
      skipped += attr(s, "skipped");
    }
    // pytest exits 5 when it collected no test, 2-4 on usage or internal errors: count a failure.
    if (exit !== 0 && failed === 0) failed = 1;
    return { passed: tests - skipped - Math.min(failed, tests - skipped), failed, skipped, status: exit };
  } catch {
    return { passed: 0, failed: 1, skipped: 0, status: exit || 1 };
  }
}
