#!/usr/bin/env node
/**
 * Builds the installable TypeScript SDK package in packages/sdk (`npm run build:sdk`):
 *   dist/index.js, dist/langgraph.js, dist/langchain.js   ESM bundles of src/sdk (and the pure
 *                                                          modules it uses), packages external
 *   dist/types/**.d.ts                                     declarations (tsc)
 * then `npm pack ./packages/sdk` makes the tarball users install (the package's `prepack` runs this
 * build first, so a pack never lacks the code; `npm pack packages/sdk` would be read as a GitHub
 * repository). The package's version follows
 * the repository's (checked here). Exit codes: 0 built, 1 build error.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkgDir = path.join(root, "packages/sdk");
const version = (file) => JSON.parse(readFileSync(file, "utf8")).version;
if (version(path.join(root, "package.json")) !== version(path.join(pkgDir, "package.json"))) {
  console.error("build-sdk: packages/sdk/package.json version differs from package.json");
  process.exit(1);
}
rmSync(path.join(pkgDir, "dist"), { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: {
    index: "src/sdk/index.ts",
    langgraph: "src/sdk/langgraph.ts",
    langchain: "src/sdk/langchain.ts",
  },
  outdir: path.join(pkgDir, "dist"),
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node24",
  packages: "external",
  sourcemap: true,
  logLevel: "warning",
});
const tsc = spawnSync(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(pkgDir, "tsconfig.json")], {
  stdio: "inherit",
});
if (tsc.status !== 0) process.exit(1);
console.log(`built ${path.relative(root, pkgDir)}/dist`);
