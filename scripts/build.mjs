#!/usr/bin/env node
/**
 * The production build (`npm run build`): bundles each process's code with esbuild into one ESM
 * file, so the images run plain JavaScript with `node` instead of loading tsx (its ESM
 * loader-hook thread and esbuild service cost ~34 MiB of RSS per process; one bundle costs
 * ~5 MiB less than the same code as one file per module).
 *
 *   node scripts/build.mjs [--outdir dist]
 *
 * Writes, directly into the output directory, with linked source maps (run with
 * --enable-source-maps to see TypeScript positions in stack traces):
 *   service.js   src/service/main.ts   the governance service
 *   sidecar.js   sidecar/main.ts       the injected sidecar
 *   operator.js  operator/main.ts      the operator
 *   replay-worker.js  src/service/replay/worker.ts  the service's replay worker threads
 *   tollgate.js  the `tollgate` CLI    src/cli/main.ts, called as bin/tollgate.mjs calls it
 *   prelude-*.js see "Evaluation order" below
 *
 * Packages stay external (`import "fastify"` is resolved from node_modules at run time): the
 * output directory must sit inside the repository, or an image with its layout and node_modules.
 *
 * Files found relative to a module (`new URL(..., import.meta.url)`: the proto files, the SQL
 * migrations, package.json) keep resolving against the source tree: in each module of ours,
 * `import.meta.url` is rewritten to the URL of its .ts file, computed from the bundle's own
 * location at run time. A bundle thus finds exactly what the module finds under tsx, wherever
 * the output directory is, as long as those data files are present (the image copies them). A
 * module using import.meta.dirname, .filename or .resolve fails the build rather than resolving
 * against the output directory.
 *
 * Evaluation order: in one ESM bundle every `import` of a package is evaluated before any of
 * our bundled code, whereas a module of ours imported for its side effects only
 * (`import "./reflect-metadata.js";`, filling in the Reflect metadata API before @peculiar/x509
 * loads) must run in its place among the imports.
 * Each such module is written as its own file, prelude-<path>.js, and the bundles import it like
 * a package, in its place. A prelude may import packages and built-ins but no module of ours
 * (it would be a second instance); the build fails if one does.
 *
 * Exit codes: 0 built, 1 build error (esbuild's messages on stderr), 2 usage error.
 */
import { spawnSync } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Output name (without .js) → entry module, relative to the repository root. */
const ENTRIES = {
  service: "src/service/main.ts",
  sidecar: "sidecar/main.ts",
  operator: "operator/main.ts",
  // The service's replay worker threads (src/service/replay/workers.ts starts them).
  "replay-worker": "src/service/replay/worker.ts",
};

/** Where our TypeScript lives (searched for side-effect imports). */
const SOURCE_DIRS = ["src", "sidecar", "operator"];

/** The CLI's entry: src/cli/main.ts exports main(); bin/tollgate.mjs calls it the same way. */
const CLI_ENTRY = `import { main } from "./src/cli/main.ts";
process.exitCode = await main(process.argv.slice(2));
`;

const SIDE_EFFECT_IMPORT = /^import\s+["'](\.{1,2}\/[^"']+)["'];?[ \t]*$/gm;

/** A relative import specifier of `importer` → the absolute path of the .ts module it names. */
const moduleOf = (importer, specifier) =>
  path.resolve(path.dirname(importer), specifier.replace(/\.js$/, ".ts"));

/** Absolute path of every module of ours imported for its side effects only → its output name. */
async function findPreludes() {
  const preludes = new Map();
  for (const dir of SOURCE_DIRS) {
    const files = await readdir(path.join(root, dir), { recursive: true });
    for (const file of files.filter((f) => f.endsWith(".ts"))) {
      const importer = path.join(root, dir, file);
      for (const [, specifier] of (await readFile(importer, "utf8")).matchAll(SIDE_EFFECT_IMPORT)) {
        const target = moduleOf(importer, specifier);
        const name = path.relative(root, target).replace(/\.ts$/, "").split(path.sep).join("-");
        preludes.set(target, `prelude-${name}`);
      }
    }
  }
  return preludes;
}

/** esbuild plugin: an import of a prelude → an external import of its file, beside the bundle. */
function preludesAsFiles(preludes) {
  return {
    name: "preludes-as-files",
    setup(build) {
      build.onResolve({ filter: /^\.{1,2}\// }, (args) => {
        if (args.kind === "entry-point" || !args.importer.endsWith(".ts")) return undefined;
        const name = preludes.get(moduleOf(args.importer, args.path));
        return name ? { path: `./${name}.js`, external: true } : undefined;
      });
    },
  };
}

/** esbuild plugin: `import.meta.url` in our modules → the URL of the module's own .ts file. */
function sourceRelativeImportMeta(outdir) {
  return {
    name: "source-relative-import-meta",
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, async (args) => {
        if (args.path.split(path.sep).includes("node_modules")) return undefined;
        const text = await readFile(args.path, "utf8");
        if (!text.includes("import.meta")) return undefined;
        const unsupported = /import\.meta\.(dirname|filename|resolve)\b/.exec(text);
        if (unsupported) {
          const what = `${unsupported[0]} in ${path.relative(root, args.path)}`;
          return { errors: [{ text: `${what} would resolve against the bundle: use import.meta.url` }] };
        }
        // Every bundle is written directly into outdir, so one relative path serves all of them.
        const relative = path.relative(outdir, args.path).split(path.sep).join("/");
        const url = `new URL(${JSON.stringify(relative)}, import.meta.url).href`;
        return { contents: text.replaceAll("import.meta.url", url), loader: "ts" };
      });
    },
  };
}

/**
 * The commit the bundles report (src/version.ts COMMIT): TOLLGATE_BUILD_COMMIT (an image build
 * passes it as a build argument), else the checkout's HEAD, else "unknown".
 */
function buildCommit() {
  if (process.env.TOLLGATE_BUILD_COMMIT) return process.env.TOLLGATE_BUILD_COMMIT;
  const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" });
  return head.status === 0 ? head.stdout.trim() : "unknown";
}

/** Bundles every entry and prelude into `outdir` (absolute); rejects on errors. */
async function build(outdir) {
  const preludes = await findPreludes();
  const common = {
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    packages: "external",
    sourcemap: "linked",
    logLevel: "warning",
    absWorkingDir: root,
    metafile: true,
    define: {
      "process.env.TOLLGATE_BUILD_COMMIT": JSON.stringify(buildCommit()),
      // workers.ts resolves it against its own source URL (import.meta.url, as rewritten below).
      "process.env.TOLLGATE_REPLAY_WORKER_BUNDLE": JSON.stringify(
        path
          .relative(path.join(root, "src/service/replay"), path.join(outdir, "replay-worker.js"))
          .split(path.sep)
          .join("/"),
      ),
    },
    plugins: [preludesAsFiles(preludes), sourceRelativeImportMeta(outdir)],
  };
  const [modules] = await Promise.all([
    esbuild.build({
      ...common,
      outdir,
      // Code behind a dynamic import() (the sidecar's MCP SDK, loaded only for an MCP upstream)
      // goes to its own chunk-*.js instead of being evaluated with the entry.
      splitting: true,
      entryPoints: [
        ...Object.entries(ENTRIES).map(([out, src]) => ({ out, in: path.join(root, src) })),
        ...[...preludes].map(([src, out]) => ({ out, in: src })),
      ],
    }),
    esbuild.build({
      ...common,
      outfile: path.join(outdir, "tollgate.js"),
      stdin: { contents: CLI_ENTRY, resolveDir: root, sourcefile: "tollgate-cli.ts", loader: "ts" },
    }),
  ]);
  for (const [out, src] of [...preludes].map(([src, out]) => [`${out}.js`, src])) {
    const output = modules.metafile.outputs[path.relative(root, path.join(outdir, out))];
    const ours = Object.keys(output?.inputs ?? {}).filter((input) => path.resolve(root, input) !== src);
    if (ours.length > 0)
      throw new Error(`prelude ${path.relative(root, src)} imports modules of ours: ${ours.join(", ")}`);
  }
}

let outdir;
try {
  const { values } = parseArgs({ options: { outdir: { type: "string", default: "dist" } } });
  outdir = path.resolve(root, values.outdir);
} catch (err) {
  process.stderr.write(`${err.message}\nusage: node scripts/build.mjs [--outdir dist]\n`);
  process.exit(2);
}
try {
  await build(outdir);
} catch (err) {
  // esbuild prints its own messages; ours are not esbuild failures.
  if (!err.errors) process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
process.stdout.write(
  `built ${path.relative(root, outdir) || "."}: ${Object.keys(ENTRIES).join(", ")}, tollgate\n`,
);
