/**
 * The build enforces the component boundaries of DESIGN.md (biome.json `overrides` with
 * `noRestrictedImports`; `npm run lint` runs in .ci/run): each case writes a one-line module
 * importing `specifier` into `dir`, lints it with the project's Biome configuration, and expects
 * it refused or accepted. The probe file is removed afterwards.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const biome = path.join(root, "node_modules/@biomejs/biome/bin/biome");

/** Lints a probe module in `dir` that imports `specifier`; true when Biome restricts the import. */
async function restricted(dir: string, specifier: string): Promise<boolean> {
  const file = path.join(root, dir, `zz-boundary-probe-${randomBytes(4).toString("hex")}.ts`);
  writeFileSync(file, `import { x } from "${specifier}";\nexport { x };\n`);
  try {
    const out = await promisify(execFile)(process.execPath, [biome, "lint", file], { cwd: root }).then(
      (r) => r.stdout + r.stderr,
      (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
    );
    return out.includes("lint/style/noRestrictedImports");
  } finally {
    rmSync(file, { force: true });
  }
}

describe("component boundaries refused by the build", () => {
  it.each([
    ["sidecar", "../src/service/app.js"],
    ["sidecar", "../src/sdk/decision.js"],
    ["sidecar", "../operator/operator.js"],
    ["sidecar/core", "../../src/service/app.js"],
    ["sidecar/core", "../faces/grpc/server.js"],
    ["sidecar/core", "../faces/http/server.js"],
    ["sidecar/wire", "../core/governor.js"],
    ["sidecar/wire", "../faces/mcp/server.js"],
    ["sidecar/faces/grpc", "../mcp/server.js"],
    ["sidecar/faces/grpc", "../http/server.js"],
    ["sidecar/faces/mcp", "../grpc/server.js"],
    ["sidecar/faces/mcp", "../http/server.js"],
    ["sidecar/faces/http", "../mcp/server.js"],
    ["sidecar/faces/http", "../grpc/server.js"],
    ["sidecar/faces/http", "../../../src/sdk/decision.js"],
    ["operator/crds", "../../src/service/orgs/orgs.js"],
    ["operator/crds", "../../src/sdk/index.js"],
    ["operator/crds", "../../sidecar/config.js"],
    ["operator/controllers/governancepolicy", "../../../src/service/app.js"],
    ["operator/controllers/governancepolicy", "../organization/reconciler.js"],
    ["operator/controllers/organization", "../approverteam/mapping.js"],
    ["operator/controllers/approverteam", "../governancepolicy/mapping.js"],
    ["operator/controllers/namespace", "../organization/reconciler.js"],
    ["operator/controllers/runtime", "../namespace/reconciler.js"],
    ["operator/controllers/shared", "../governancepolicy/mapping.js"],
    ["operator/controllers/runtime", "../../../src/sdk/index.js"],
    ["src/sdk", "../service/app.js"],
    ["src/sdk", "../../sidecar/config.js"],
    ["src/service/chains", "../../sdk/index.js"],
    ["src/service", "../../operator/operator.js"],
    ["src/policy", "../service/app.js"],
    ["src/receipts", "../sdk/index.js"],
    ["src/receipts", "../contract/v1/wire.js"],
    ["src/policy", "../receipts/schema.js"],
    ["src/policy", "../contract/v1/wire.js"],
    ["src/contract/v1", "../../service/app.js"],
  ])("%s may not import %s", async (dir, specifier) => {
    expect(await restricted(dir, specifier)).toBe(true);
  });

  it.each([
    ["sidecar", "../src/sdk/index.js"],
    ["sidecar/core", "../wire/errors.js"],
    ["sidecar/core", "../../src/sdk/index.js"],
    ["sidecar/faces/grpc", "../../core/governor.js"],
    ["sidecar/faces/mcp", "../../wire/decision.js"],
    ["sidecar/faces/mcp", "./tasks.js"],
    ["operator/crds", "../../src/contract/v1/admin.js"],
    ["operator/controllers/governancepolicy", "../runtime/resource-reconciler.js"],
    ["operator/controllers/governancepolicy", "../shared/organization-scoped-reconciler.js"],
    ["operator/controllers/namespace", "../shared/organization-ref.js"],
    ["operator/controllers/organization", "../../governance/client.js"],
    ["operator/controllers", "./organization/reconciler.js"],
    ["src/service/chains", "../../contract/v1/admin.js"],
    ["src/sdk", "../policy/sanitize.js"],
    ["src/contract/v1", "../../policy/schema.js"],
    ["src/contract/v1", "../../receipts/schema.js"],
  ])("%s may import %s", async (dir, specifier) => {
    expect(await restricted(dir, specifier)).toBe(false);
  });
});

describe("import cycles refused by the build", () => {
  /** Lints two probe modules in `dir` that import each other; true when Biome reports the cycle. */
  async function cycleRefused(dir: string, typeOnly: boolean): Promise<boolean> {
    const tag = randomBytes(4).toString("hex");
    const a = path.join(root, dir, `zz-cycle-a-${tag}.ts`);
    const b = path.join(root, dir, `zz-cycle-b-${tag}.ts`);
    const kw = typeOnly ? "import type" : "import";
    writeFileSync(
      a,
      `${kw} { B } from "./zz-cycle-b-${tag}.js";\nexport type A = { b?: B };\nexport const a = 1;\n`,
    );
    writeFileSync(
      b,
      `${kw} { A } from "./zz-cycle-a-${tag}.js";\nexport type B = { a?: A };\nexport const b = 2;\n`,
    );
    try {
      const out = await promisify(execFile)(process.execPath, [biome, "lint", a, b], { cwd: root }).then(
        (r) => r.stdout + r.stderr,
        (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
      );
      return out.includes("lint/suspicious/noImportCycles");
    } finally {
      rmSync(a, { force: true });
      rmSync(b, { force: true });
    }
  }

  it.each([
    ["src/service/chains", false],
    ["src/service/approvals", true],
    ["sidecar", false],
  ])("two modules of %s importing each other (type-only: %s) fail the lint", async (dir, typeOnly) => {
    expect(await cycleRefused(dir, typeOnly)).toBe(true);
  });
});
