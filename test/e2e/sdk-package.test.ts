/**
 * The TypeScript SDK as users install it: `npm pack ./packages/sdk` from the repository root on a
 * checkout without packages/sdk/dist (the package's `prepack` builds it), the
 * tarball installed into a fresh project with npm, then imported from plain Node.js (no tsx) to
 * govern a real action against the real service, and type-checked by a TypeScript consumer.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

const root = path.resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

describe("@tollgate/sdk installed from its npm pack tarball", () => {
  let dir: string;
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-sdk-package-"));
    rmSync(path.join(root, "packages/sdk/dist"), { recursive: true, force: true });
    // The README's command, as written (a bare `packages/sdk` would be read as a GitHub repository).
    await run("npm", ["pack", "./packages/sdk", "--pack-destination", dir], { cwd: root, timeout: 120_000 });
    const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
    if (!tarball) throw new Error("npm pack made no tarball");
    writeFileSync(
      path.join(dir, "package.json"),
      JSON.stringify({ name: "consumer", private: true, type: "module" }),
    );
    // @types/node: the SDK is a Node.js library, so its declarations use Node's types.
    await run(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefer-offline", `./${tarball}`, "@types/node@24"],
      {
        cwd: dir,
        timeout: 240_000,
      },
    );
    // The e2e project sets no database: the embedded one, as a first trial runs.
    process.env.TOLLGATE_TEST_DB ??= "pglite";
    t = await startTestService({ listen: true });
    org = await t.bootstrapOrg("sdk-package");
  }, 300_000);
  afterAll(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("imports from plain Node.js and governs an action against the real service", async () => {
    writeFileSync(
      path.join(dir, "consumer.mjs"),
      `import { Chain, init, ServiceApiError } from "@tollgate/sdk";
init(process.env.KEY, { backendUrl: process.env.URL });
const chain = await new Chain("packaged").enter();
const decision = await chain.recordAgentAction({ agentName: "clerk", actionType: "tool_call", actionName: "read_file", payload: { path: "/tmp/a" } });
const done = await chain.exit();
console.log(JSON.stringify({ decision: decision.policy_decision, receipt: done.receipt_number, typed: typeof ServiceApiError }));
`,
    );
    const { stdout } = await run(process.execPath, ["consumer.mjs"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", KEY: org.clientKey, URL: t.url },
    });
    expect(JSON.parse(stdout)).toEqual({
      decision: "allow",
      receipt: expect.stringMatching(/^PR-\d{4}-\d{5}$/),
      typed: "function",
    });
  });

  /** Type-checks `files` of the consumer project against the package's declarations; tsc's output. */
  async function typeCheck(files: string[]): Promise<{ code: number; out: string }> {
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2023",
          // Chain is an AsyncDisposable (await using): the declarations name Symbol.asyncDispose.
          lib: ["ES2023", "ESNext.Disposable"],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
        },
        files,
      }),
    );
    return run(
      process.execPath,
      [path.join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"],
      {
        cwd: dir,
      },
    ).then(
      () => ({ code: 0, out: "" }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
  }

  it("type-checks a TypeScript consumer against the package's declarations", async () => {
    writeFileSync(
      path.join(dir, "consumer.ts"),
      `import { type AgentAction, Chain, type PolicyDecision, ServiceClient } from "@tollgate/sdk";
const chain: Chain = new Chain("typed");
const action: AgentAction = { agentName: "a", actionType: "tool_call", actionName: "x" };
const d: Promise<PolicyDecision> = chain.recordAgentAction(action, { signal: AbortSignal.timeout(1000) });
const source: Promise<string> = d.then((x) => x.decision_source);
const c: ServiceClient = new ServiceClient({ apiKey: "tg_x" });
export { c, d, source };
`,
    );
    const r = await typeCheck(["consumer.ts"]);
    expect(r.out).toBe("");
    expect(r.code).toBe(0);
  });

  it("type-checks the manual's TypeScript SDK examples that import only the package", async () => {
    const body = readFileSync(path.join(root, "docs/getting-started/typescript-sdk.md"), "utf8");
    const snippets = [...body.matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((code) =>
        [...code.matchAll(/from "([^"]+)"/g)].every((i) => i[1]!.startsWith("@tollgate/sdk")),
      );
    // The init/Chain example, withChain with a signal, and the verification helpers at least.
    expect(snippets.length).toBeGreaterThanOrEqual(3);
    const files = snippets.map((code, i) => {
      const file = `docs-example-${i + 1}.ts`;
      // What an example takes from its surroundings.
      writeFileSync(path.join(dir, file), `declare const receiptId: string;\n${code}\nexport {};\n`);
      return file;
    });
    const r = await typeCheck(files);
    expect(r.out).toBe("");
    expect(r.code).toBe(0);
  });
});
