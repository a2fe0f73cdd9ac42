/**
 * The documentation site (docs/, mkdocs.yml): `npm run docs` generates the Reference from the
 * sources and `mkdocs build --strict` builds it — a broken internal link, a broken anchor or a
 * missing page fails. The Python tools come from scripts/docs-env.sh's virtualenv (.ci/run
 * prepares it); when it cannot be made the test fails, it never skips. Also: the README stays a
 * front door (≤ 200 lines, the two commands first, nothing outside the repository).
 * The code blocks the README used to carry are run and type-checked where they now live:
 * test/e2e/curl-walkthrough.test.ts (docs/getting-started/curl.md) and test/e2e/sdk-package.test.ts
 * (docs/getting-started/typescript-sdk.md).
 */
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "tg-docs-"));
const site = path.join(tmp, "site");

/** Runs a command without blocking the worker (a sync spawn of a minute starves vitest's RPC). */
function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

function files(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext) && statSync(path.join(dir, f)).isFile())
    .map((f) => f.split(path.sep).join("/"));
}

/** Every `path.md` the nav of mkdocs.yml names. */
function navPages(): string[] {
  const yml = readFileSync(path.join(root, "mkdocs.yml"), "utf8");
  const nav = yml.slice(yml.indexOf("\nnav:"));
  return [...nav.matchAll(/(?:^|\s)([\w./-]+\.md)\s*$/gm)].map((m) => m[1]!);
}

describe("the documentation site", () => {
  let build: { status: number | null; stdout: string; stderr: string };
  let mkdocs = "";

  beforeAll(async () => {
    const env = await run("bash", ["scripts/docs-env.sh"], { cwd: root });
    if (env.status !== 0)
      throw new Error(`scripts/docs-env.sh failed (the docs virtualenv is required):\n${env.stderr}`);
    mkdocs = path.join(env.stdout.trim().split("\n").pop()!, "mkdocs");
    build = await run("npx", ["tsx", "scripts/docs.ts", "--site-dir", site], { cwd: root });
  }, 900_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("generates the reference and builds with mkdocs --strict", () => {
    expect(build.status, `${build.stdout}\n${build.stderr}`).toBe(0);
    for (const page of [
      "http-api.md",
      "openapi.json",
      "grpc.md",
      "crds.md",
      "chart-values.md",
      "configuration.md",
      "errors.md",
      "typescript-sdk/index.md",
      "python-sdk/sdk.html",
    ])
      expect(existsSync(path.join(root, "docs/reference", page)), page).toBe(true);
  });

  it("has a page in the site for every page of the nav, and the nav names only existing pages", () => {
    const pages = navPages();
    expect(pages.length).toBeGreaterThan(40);
    for (const p of pages) {
      expect(existsSync(path.join(root, "docs", p)), `docs/${p}`).toBe(true);
      const html =
        p === "index.md" ? "index.html" : p.replace(/(index)?\.md$/, "").replace(/\/?$/, "/index.html");
      expect(existsSync(path.join(site, html)), html).toBe(true);
    }
  });

  it("the generated reference says what the sources say", () => {
    const read = (p: string) => readFileSync(path.join(root, "docs/reference", p), "utf8");
    expect(read("http-api.md")).toContain("POST `/v1/chains/{chain_id}/actions`");
    expect(read("grpc.md")).toContain("## ToolGateway");
    expect(read("crds.md")).toContain("## GovernancePolicy");
    expect(read("configuration.md")).toMatch(/`TOLLGATE_REATTACH_WINDOW_SECONDS` \| number \| `600`/);
    expect(read("configuration.md")).toContain("`TOLLGATE_WEBHOOK_CERT_MODE`");
    expect(read("configuration.md")).toContain("`DATABASE_URL`");
    expect(read("errors.md")).toMatch(/\| 409 \| `TG_ERR_APPROVAL_PENDING` \|/);
    expect(read("chart-values.md")).toContain("`database.existingSecret`");
  });

  it("fails the build on a broken internal link", async () => {
    const copy = path.join(tmp, "broken");
    cpSync(path.join(root, "docs"), path.join(copy, "docs"), { recursive: true });
    cpSync(path.join(root, "mkdocs.yml"), path.join(copy, "mkdocs.yml"));
    const index = path.join(copy, "docs/index.md");
    writeFileSync(index, `${readFileSync(index, "utf8")}\n[gone](concepts/no-such-page.md)\n`);
    const r = await run(mkdocs, ["build", "--strict", "--site-dir", path.join(copy, "site")], {
      cwd: copy,
      env: { ...process.env, NO_MKDOCS_2_WARNING: "1" },
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("no-such-page.md");
  }, 120_000);

  it("hand-written pages link nowhere outside the repository", () => {
    const generated = /^reference\/(?!index\.md|python\.md|spec-decisions\.md)/;
    for (const f of files(path.join(root, "docs"), ".md").filter((f) => !generated.test(f))) {
      const text = readFileSync(path.join(root, "docs", f), "utf8");
      expect(text.match(/\]\((https?:|\.\.\/\.\.\/)[^)]*\)/g) ?? [], f).toEqual([]);
      expect(text, f).not.toMatch(/DESIGN\.md|shared\/spec/);
    }
  });
});

describe("the README", () => {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");

  it("is a front door: at most 200 lines, the two commands first", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(200);
    const first = readme.split("\n").slice(0, 6).join("\n");
    expect(first).toContain("npm install && npm run demo");
    expect(first).toMatch(/^npm test\b/m);
  });

  it("links only to files in the repository", () => {
    const links = [...readme.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(10);
    for (const link of links) {
      expect(link, link).not.toMatch(/^[a-z]+:/);
      expect(existsSync(path.join(root, link.split("#")[0]!)), link).toBe(true);
    }
    expect(readme).not.toMatch(/DESIGN\.md|shared\/spec|No Docker engine/);
  });
});
