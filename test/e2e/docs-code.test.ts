/**
 * The code blocks of the hand-written documentation (docs/ minus the generated Reference, and the
 * README) still type-check: every TypeScript block with tsc against the sources (the SDK as
 * `@tollgate/sdk`, the project's dependencies from node_modules), every Python block with mypy in
 * the Python SDK's virtualenv (scripts/python-env.sh; when it cannot be made the test fails), every
 * shell block parses with `bash -n`. Third-party modules the SDK's virtualenv does not carry (an
 * example's `crewai_tools`) are not checked; the SDK's own names are. A block that stops compiling (a renamed export, a changed
 * signature) fails CI. Blocks are also run where a test can run them: docs/getting-started/curl.md
 * (test/e2e/curl-walkthrough.test.ts) and the TypeScript SDK page (test/e2e/sdk-package.test.ts).
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
/** Inside test/ so that a block's `../support/…` import (docs/development) resolves as in a test. */
const work = mkdtempSync(path.join(root, "test", ".doc-blocks-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * What a block takes from the prose around it: the receipt it verifies, the manifest it applies,
 * and the user's own graph parts (model node, tools, router) the LangGraph example wires up.
 */
const TS_SURROUNDINGS = [
  "declare const receiptId: string;",
  "declare const manifest: string;",
  "declare const callModel: (state: { messages: unknown[] }) => Promise<{ messages: unknown[] }>;",
  'declare const tools: import("@langchain/core/tools").StructuredToolInterface[];',
  'declare const route: (state: { messages: unknown[] }) => "tools" | "__end__";',
  "",
].join("\n");

type Block = { page: string; lang: string; code: string };

function run(cmd: string, args: string[], cwd: string): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    p.on("error", reject);
    p.on("close", (status) => resolve({ status, out }));
  });
}

/** The fenced blocks of the hand-written pages (the Reference's generated pages excluded). */
function blocks(): Block[] {
  const generated = /^reference\/(?!index\.md|python\.md|spec-decisions\.md)/;
  const pages = readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" })
    .map((f) => f.split(path.sep).join("/"))
    .filter((f) => f.endsWith(".md") && !generated.test(f) && statSync(path.join(root, "docs", f)).isFile())
    .map((f) => `docs/${f}`);
  return ["README.md", ...pages].flatMap((page) =>
    [...readFileSync(path.join(root, page), "utf8").matchAll(/^```(\w+)[^\n]*\n([\s\S]*?)^```/gm)].map(
      (m) => ({
        page,
        lang: m[1]!,
        code: m[2]!,
      }),
    ),
  );
}

const all = blocks();
const of = (...langs: string[]) => all.filter((b) => langs.includes(b.lang));
const fileName = (b: Block, i: number, ext: string) =>
  `${b.page.replace(/[^\w]+/g, "_").replace(/_md$/, "")}_${i + 1}.${ext}`;

describe("the documentation's code blocks", () => {
  it("TypeScript blocks type-check against the sources", async () => {
    const ts = of("ts", "typescript");
    // docs/getting-started/typescript-sdk.md and docs/development/control-plane.md at least.
    expect(ts.length).toBeGreaterThanOrEqual(5);
    const files = ts.map((b, i) => {
      const file = fileName(b, i, "ts");
      writeFileSync(path.join(work, file), `${TS_SURROUNDINGS}${b.code}\nexport {};\n`);
      return file;
    });
    writeFileSync(
      path.join(work, "tsconfig.json"),
      JSON.stringify({
        extends: "../../tsconfig.json",
        compilerOptions: {
          paths: {
            "@tollgate/sdk": ["../../src/sdk/index.ts"],
            "@tollgate/sdk/*": ["../../src/sdk/*.ts"],
          },
        },
        include: [],
        files,
      }),
    );
    const r = await run(
      process.execPath,
      [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "."],
      work,
    );
    expect(r.out).toBe("");
    expect(r.status).toBe(0);
  }, 240_000);

  it("Python blocks type-check with mypy against the Python SDK", async () => {
    const py = of("python", "py");
    expect(py.length).toBeGreaterThanOrEqual(1);
    const env = await run("bash", ["scripts/python-env.sh"], root);
    if (env.status !== 0)
      throw new Error(`scripts/python-env.sh failed (the Python SDK's virtualenv is required):\n${env.out}`);
    const python = env.out.trim().split("\n").pop()!;
    const dir = path.join(work, "python");
    mkdirSync(dir);
    const files = py.map((b, i) => {
      const file = fileName(b, i, "py");
      writeFileSync(path.join(dir, file), b.code);
      return file;
    });
    const r = await run(
      python,
      ["-m", "mypy", "--no-incremental", "--follow-imports=silent", "--ignore-missing-imports", ...files],
      dir,
    );
    expect(r.out).toMatch(/^Success: no issues found/m);
    expect(r.status).toBe(0);
  }, 600_000);

  it("shell blocks parse", async () => {
    const sh = of("bash", "sh");
    expect(sh.length).toBeGreaterThanOrEqual(10);
    for (const [i, b] of sh.entries()) {
      const file = path.join(work, fileName(b, i, "sh"));
      // `<pod>`-style placeholders are the manual's convention for what the reader fills in.
      writeFileSync(file, b.code.replace(/<([\w.-]+)>/g, "PLACEHOLDER_$1"));
      const r = await run("bash", ["-n", file], work);
      expect(r.out, `${b.page}:\n${b.code}`).toBe("");
      expect(r.status).toBe(0);
    }
  });
});
