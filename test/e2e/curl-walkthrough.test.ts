/**
 * The curl walkthrough of the manual (docs/getting-started/curl.md), as a user runs it: the service process on
 * embedded PGlite (`npm start`), the curl sequence exactly as written, --help, and a graceful
 * stop on SIGTERM.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/postgres.js";

const root = path.resolve(import.meta.dirname, "../..");

function walkthrough(): string {
  const page = readFileSync(path.join(root, "docs/getting-started/curl.md"), "utf8");
  const m = page.match(/<!-- walkthrough[^>]*-->\s*```bash\n([\s\S]*?)```/);
  if (!m?.[1]) throw new Error("docs/getting-started/curl.md: walkthrough block not found");
  return m[1];
}

describe("docs: npm start and the curl walkthrough", () => {
  let dir: string;
  let port: number;
  let proc: ChildProcess;
  let logs = "";

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-readme-"));
    port = await freePort();
    // `npm start` is exactly this command (asserted below); spawning it directly lets the test
    // send SIGTERM to the service itself rather than to npm.
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    expect(pkg.scripts.start).toBe("tsx src/service/main.ts");
    proc = spawn(process.execPath, ["--import", "tsx", "src/service/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        TOLLGATE_DATA_DIR: path.join(dir, ".tollgate"),
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout!.on("data", (d) => (logs += d));
    proc.stderr!.on("data", (d) => (logs += d));
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`);
        if (r.ok) break;
      } catch {}
      if (Date.now() > deadline) throw new Error(`service did not become ready:\n${logs}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
  afterAll(async () => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("the walkthrough works as written", () => {
    const run = spawnSync("bash", ["-euo", "pipefail", "-c", walkthrough()], {
      cwd: dir,
      env: { ...process.env, TG: `http://localhost:${port}` },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, run.stderr + run.stdout).toBe(0);
    const out = run.stdout;
    expect(out).toMatch(/^allow$/m);
    expect(out).toMatch(/^pending$/m);
    expect(out).toMatch(/^approved$/m);
    expect(out).toMatch(/^human_approval$/m);
    expect(out).toMatch(/"receipt_number": "PR-\d{4}-00001"/);
    expect(out).toMatch(/"signature": "hmac-sha256:[0-9a-f]{64}"/);
  });

  it("logs carry no secrets", () => {
    const token = readFileSync(path.join(dir, ".tollgate", "admin-token"), "utf8").trim();
    expect(logs).not.toContain(token);
    expect(logs).not.toMatch(/tg_[A-Za-z0-9_-]{40}/);
    expect(logs).toContain("starting Tollgate governance service");
  });

  it("stops gracefully on SIGTERM with exit code 0", async () => {
    const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
    proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(logs).toContain("stopped");
  });

  it("--help describes flags and environment", () => {
    const r = spawnSync("npx", ["tsx", "src/service/main.ts", "--help"], { cwd: root, encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("DATABASE_URL");
    expect(r.stdout).toContain("--port");
  });

  it("rejects invalid configuration naming the variable", () => {
    const r = spawnSync("npx", ["tsx", "src/service/main.ts"], {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, PORT: "notaport", TOLLGATE_DATA_DIR: path.join(dir, "bad") },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("PORT");
  });
});
