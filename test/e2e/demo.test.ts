/**
 * `npm run demo -- --approve-after 1` (issue 8), run non-interactively as CI runs it: the real
 * service, sidecar and MCP servers; the test reads the demo's progress output and exit code.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const tsx = path.join(root, "node_modules/.bin/tsx");

describe("npm run demo", () => {
  it("is the src/demo entry point", () => {
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    expect(pkg.scripts.demo).toBe("tsx src/demo/main.ts");
  });

  it("--approve-after 1: every step behaves and the demo exits 0", () => {
    const run = spawnSync(tsx, ["src/demo/main.ts", "--approve-after", "1"], {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
      timeout: 110_000,
    });
    const out = run.stdout;
    expect(run.status, out + run.stderr).toBe(0);
    expect(out).not.toContain("✘");
    expect(out).toMatch(/✔ files\.read_text_file allowed/);
    expect(out).toMatch(
      /✔ send_email to globex\.example \(first external communication\): waiting for approval/,
    );
    expect(out).toMatch(/review it at http:\/\/127\.0\.0\.1:\d+\/dashboard\/approvals/);
    expect(out).toMatch(/✔ pay_invoice 7,500 USD: approved through the API/);
    expect(out).toMatch(/✔ memory\.delete_entities \(20 leads\) denied {2}no-bulk-memory-deletes/);
    expect(out).toMatch(/✔ the deletion never reached the memory server/);
    expect(out).toMatch(/✔ chain completed {2}receipt PR-\d{4}-00001/);
    expect(out).toMatch(/✔ GET \/v1\/verification\/v2\/receipts\/\{id\} {2}overall_status=valid/);
    expect(out).toMatch(/✔ public token link .*verification_status=valid/);
    expect(out).toMatch(/Result: VALID/);
    expect(out).toMatch(/All steps behaved as expected \(17 checks passed\)/);
  });

  it("rejects a bad --approve-after with exit code 2", () => {
    const run = spawnSync(tsx, ["src/demo/main.ts", "--approve-after", "soon"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/approve-after/);
  });
});
