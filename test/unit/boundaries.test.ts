/**
 * The build enforces the component boundaries of DESIGN.md (biome.json `overrides` with
 * `noRestrictedImports`; `npm run lint` runs in .ci/run): each case is a one-line module
 * importing `specifier` in `dir`, expected refused or accepted by the project's Biome
 * configuration. All probe modules are written and linted in one Biome run before the cases
 * (one process, not one per case: ~3 s instead of ~2 minutes) and removed afterwards.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const biome = path.join(root, "node_modules/@biomejs/biome/bin/biome");
const tag = randomBytes(4).toString("hex");

/** Probe modules of this run: path relative to the root → its source. */
const probes = new Map<string, string>();
/** The lint rules Biome reported per probe (relative path), filled by the one lint run. */
const reported = new Map<string, Set<string>>();

/** Registers a probe module in `dir` that imports `specifier`; returns its relative path. */
function importProbe(dir: string, specifier: string): string {
  const file = path.join(dir, `zz-boundary-probe-${tag}-${probes.size}.ts`);
  probes.set(file, `import { x } from "${specifier}";\nexport { x };\n`);
  return file;
}

/** Registers a probe per [dir, specifier]; rows of [dir, specifier, probe path] for it.each. */
const importProbes = (pairs: [string, string][]): [string, string, string][] =>
  pairs.map(([dir, specifier]) => [dir, specifier, importProbe(dir, specifier)]);

/** Registers two probe modules in `dir` that import each other; returns their relative paths. */
function cyclePair(dir: string, typeOnly: boolean): [string, string] {
  const [a, b] = ["a", "b"].map((s) => `zz-cycle-${s}-${tag}-${probes.size}`);
  const kw = typeOnly ? "import type" : "import";
  const fa = path.join(dir, `${a}.ts`);
  const fb = path.join(dir, `${b}.ts`);
  probes.set(fa, `${kw} { B } from "./${b}.js";\nexport type A = { b?: B };\nexport const a = 1;\n`);
  probes.set(fb, `${kw} { A } from "./${a}.js";\nexport type B = { a?: A };\nexport const b = 2;\n`);
  return [fa, fb];
}

const rulesOf = (file: string) => reported.get(file) ?? new Set<string>();

// All probes are written and linted together, with the project's Biome configuration, in one run
// (one Biome process instead of one per case); each case then reads what was reported for its file.
beforeAll(async () => {
  for (const [file, source] of probes) writeFileSync(path.join(root, file), source);
  const out = await promisify(execFile)(
    process.execPath,
    [biome, "lint", "--reporter=json", "--max-diagnostics=none", ...probes.keys()],
    { cwd: root, maxBuffer: 64 << 20 },
  ).then(
    (r) => r.stdout,
    (e: { stdout: string }) => e.stdout,
  );
  const result = JSON.parse(out) as { diagnostics: { category: string; location: { path: string } }[] };
  for (const d of result.diagnostics) {
    const file = path.normalize(d.location.path);
    if (!reported.has(file)) reported.set(file, new Set());
    reported.get(file)!.add(d.category);
  }
}, 120_000);
afterAll(() => {
  for (const file of probes.keys()) rmSync(path.join(root, file), { force: true });
});

describe("component boundaries refused by the build", () => {
  it.each(
    importProbes([
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
    ]),
  )("%s may not import %s", (_dir, _specifier, file) => {
    expect(rulesOf(file)).toContain("lint/style/noRestrictedImports");
  });

  it.each(
    importProbes([
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
    ]),
  )("%s may import %s", (_dir, _specifier, file) => {
    expect(rulesOf(file)).not.toContain("lint/style/noRestrictedImports");
  });
});

describe("import cycles refused by the build", () => {
  it.each(
    (
      [
        ["src/service/chains", false],
        ["src/service/approvals", true],
        ["sidecar", false],
      ] as const
    ).map(([dir, typeOnly]) => [dir, typeOnly, cyclePair(dir, typeOnly)] as const),
  )("two modules of %s importing each other (type-only: %s) fail the lint", (_dir, _typeOnly, pair) => {
    for (const file of pair) expect(rulesOf(file)).toContain("lint/suspicious/noImportCycles");
  });
});
