/**
 * `npm run demo -- --approve-after 1` (issue 8), run non-interactively as CI runs it, with each
 * scripted agent (`--agent ts`, `--agent python`; issue 23): the real service, sidecar, MCP
 * servers and agent, each a process of its own (issue 19). The test reads the demo's progress
 * output and exit code, checks that both agents pass the same 17 checks, and that nothing the
 * demo started outlives it — also when SIGTERM interrupts it while it waits for a person.
 * The Python agent needs Python 3.10+ (scripts/python-env.sh); without it the test fails.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/** The demo's checks, in order (the text before a check's detail). */
const EXPECTED_CHECKS = [
  "files.list_directory allowed and forwarded",
  "files.read_text_file allowed",
  "memory.create_entities (20 leads) allowed",
  "memory.read_graph allowed, 20 leads stored",
  "send_email to globex.example (first external communication): waiting for approval",
  "send_email to globex.example (first external communication): approved through the API",
  "send_email went ahead after the human approval",
  "pay_invoice 7,500 USD: waiting for approval",
  "pay_invoice 7,500 USD: approved through the API",
  "pay_invoice went ahead after the human approval",
  "memory.delete_entities (20 leads) denied",
  "the deletion never reached the memory server (20 leads still stored)",
  "chain completed",
  "receipt signed (HMAC-SHA256)",
  "GET /v1/verification/v2/receipts/{id}",
  "public token link (no credentials)",
  "tollgate verify: VALID against the service's published keys",
];

/** The names of the passed checks the demo printed, in order. */
const passedChecks = (out: string) => [...out.matchAll(/^ {3}✔ (.+?)(?: {2}.*)?$/gm)].map((m) => m[1]);

/** The demo's temporary folder, from its "service ... (data in <dir>/service)" line. */
const demoDir = (out: string) => out.match(/\(data in (\/\S+)\/service\)/)?.[1];

/**
 * Processes whose command line or environment names `dir`: the service (its data folder), the
 * sidecar (its API key file), the MCP servers and the agent (the workspace). Reads /proc.
 */
function processesUsing(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ");
      if (`${cmdline}${readFileSync(`/proc/${pid}/environ`, "latin1")}`.includes(dir))
        found.push(`${pid} ${cmdline}`);
    } catch {} // gone meanwhile, or not ours to read
  }
  return found;
}

/** Asserts what every complete run prints, and that it left no process and no folder behind. */
function expectCompleteRun(out: string, agent: RegExp) {
  expect(out).not.toContain("✘");
  expect(out).toMatch(agent);
  expect(passedChecks(out)).toEqual(EXPECTED_CHECKS);
  expect(out).toMatch(/✔ files\.read_text_file allowed/);
  expect(out).toMatch(/review it at http:\/\/127\.0\.0\.1:\d+\/dashboard\/approvals/);
  expect(out).toMatch(/✔ send_email went ahead after the human approval {2}decision_source=human_approval/);
  expect(out).toMatch(/✔ memory\.delete_entities \(20 leads\) denied {2}no-bulk-memory-deletes/);
  expect(out).toMatch(/✔ chain completed {2}receipt PR-\d{4}-00001/);
  expect(out).toMatch(/✔ GET \/v1\/verification\/v2\/receipts\/\{id\} {2}overall_status=valid/);
  expect(out).toMatch(/✔ public token link .*verification_status=valid/);
  expect(out).toMatch(/Result: VALID/);
  expect(out).toMatch(/All steps behaved as expected \(17 checks passed\)/);
  const dir = demoDir(out);
  expect(dir, out).toBeDefined();
  expect(existsSync(dir!)).toBe(false);
  expect(processesUsing(dir!)).toEqual([]);
}

/**
 * Runs `command args` from the repository root to its end, asynchronously (a synchronous spawn
 * would stall the vitest worker's own messages meanwhile); SIGTERM after `timeoutMs`.
 */
function run(
  command: string,
  args: string[],
  timeoutMs = 110_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGTERM"), timeoutMs);
  return new Promise((resolve) => {
    child.once("error", (err) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: `${stderr}${err.message}` });
    });
    child.once("exit", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** Runs the demo with `args`. */
const runDemo = (args: string[]) => run(process.execPath, ["--import", "tsx", "src/demo/main.ts", ...args]);

describe("npm run demo", () => {
  beforeAll(async () => {
    // Creates the Python agent's virtualenv once (minutes the first time), so the run below is timed alone.
    const env = await run("bash", ["scripts/python-env.sh"], 900_000);
    if (env.status !== 0)
      throw new Error(`scripts/python-env.sh failed (Python 3.10+ is required):\n${env.stderr}`);
  }, 900_000);

  it("is the src/demo entry point", () => {
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    expect(pkg.scripts.demo).toBe("tsx src/demo/main.ts");
  });

  it("--approve-after 1 (TypeScript agent): every step behaves and the demo exits 0", async () => {
    const run = await runDemo(["--approve-after", "1"]);
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expectCompleteRun(
      run.stdout,
      // The Node.js running the tests (CI runs this file on each LTS line): nothing on the way
      // (a node_modules/.bin/node link, PATH) swapped it.
      new RegExp(
        `^ {3}agent {5}TypeScript \\(Node\\.js ${process.version.replaceAll(".", "\\.")}, @grpc/grpc-js\\), process \\d+$`,
        "m",
      ),
    );
  });

  it("--approve-after 1 --agent python: the same script in Python passes the same checks", async () => {
    const run = await runDemo(["--approve-after", "1", "--agent", "python"]);
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expectCompleteRun(run.stdout, /^ {3}agent {5}Python \(3\.\d+\.\d+, grpcio [\d.]+\), process \d+$/m);
  });

  it("SIGTERM while waiting for a person stops every process and exits 143", async () => {
    let out = "";
    const demo: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/demo/main.ts"], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    demo.stdout!.on("data", (d) => (out += d));
    demo.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => demo.once("exit", (code) => r(code)));
    const deadline = Date.now() + 90_000;
    while (!out.includes("waiting for a human decision") && demo.exitCode === null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(out).toContain("waiting for a human decision");
    const dir = demoDir(out)!;
    expect(processesUsing(dir).length).toBeGreaterThanOrEqual(4);
    demo.kill("SIGTERM");
    expect(await exited, out).toBe(143);
    expect(out).toMatch(/SIGTERM: stopping the agent, the sidecar and the service/);
    expect(existsSync(dir)).toBe(false);
    expect(processesUsing(dir)).toEqual([]);
  });

  it("rejects a bad --approve-after or --agent with exit code 2", async () => {
    const bad = await runDemo(["--approve-after", "soon"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/approve-after/);
    const agent = await runDemo(["--agent", "rust"]);
    expect(agent.status).toBe(2);
    expect(agent.stderr).toMatch(/--agent.*Allowed choices are ts, python/);
  });
});
