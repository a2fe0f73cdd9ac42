#!/usr/bin/env node
// The Node.js this project runs on: package.json `engines.node` (">=24") is the floor, the file
// .node-version the release the project fetches when the machine's Node.js is older (these
// machines' system Node.js is 20, end of life since 2026-04-30). Written for any Node.js >= 18:
// it runs before anything else can check.
//
//   node scripts/node-lts.mjs ensure        npm `postinstall`: with an older Node.js, fetch the
//                                          pinned release from the npm registry (the package
//                                          node-<platform>-<arch>, as the local node base image
//                                          does) into the cache and link node_modules/.bin/node to
//                                          it, so every npm script (`npm run demo`, `npm test`)
//                                          and what it spawns run on it; with a recent enough
//                                          Node.js, remove such a link. Exit 1 with one line on
//                                          stderr when it cannot.
//   node scripts/node-lts.mjs check         npm `pretest`/`predemo`: exit 1 with one line saying
//                                          what to run when this Node.js is older than the floor.
//   node scripts/node-lts.mjs bin [VERSION] print the bin directory of Node.js VERSION (default:
//                                          .node-version), fetched into the cache once (.ci/run
//                                          uses it for the LTS lines it tests).
//
// Cache: ${TOLLGATE_CACHE_DIR:-~/.cache/tollgate}/node/<version>-<platform>-<arch>/bin/node,
// keyed by version. Links and paths are relative to the current directory (npm runs lifecycle
// scripts in the package root).
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The lowest major version a `>=N` or `>=N.M.P` engines range allows.
 * @param {string} range e.g. ">=24"
 * @returns {number} e.g. 24
 * @throws {Error} for any other form of range
 */
export function floorMajor(range) {
  const m = /^>=\s*(\d+)(?:\.\d+){0,2}$/.exec(range.trim());
  if (!m) throw new Error(`engines.node must read ">=N" (found "${range}")`);
  return Number(m[1]);
}

/**
 * The one line for a Node.js older than the floor, or undefined when `version` is recent enough.
 * @param {string} version process.version, e.g. "v20.20.2"
 * @param {string} range engines.node, e.g. ">=24"
 * @param {string} pinned the release the project fetches, e.g. "24.21.0"
 * @returns {string | undefined}
 */
export function tooOld(version, range, pinned) {
  const major = Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);
  if (major >= floorMajor(range)) return undefined;
  return (
    `tollgate needs Node.js ${range} (this is ${version}): run \`npm install\` (it fetches Node.js ${pinned} ` +
    `from the npm registry for the npm scripts) or install Node.js ${floorMajor(range)} or later`
  );
}

/** engines.node of package.json and the pinned release of .node-version. */
export function projectNode() {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  const pinned = readFileSync(path.join(root, ".node-version"), "utf8").trim();
  if (!/^\d+\.\d+\.\d+$/.test(pinned)) throw new Error(`.node-version must hold one version (found "${pinned}")`);
  return { range: String(pkg.engines?.node ?? ""), pinned };
}

/** The npm package that carries the Node.js binary for this machine. */
function binaryPackage() {
  if (process.platform !== "linux" && process.platform !== "darwin")
    throw new Error(`no Node.js binary package for ${process.platform}`);
  return `node-${process.platform}-${process.arch}`;
}

/**
 * The bin directory of Node.js `version`, fetched with `npm pack` into the cache on first use.
 * @param {string} version e.g. "24.21.0"
 * @returns {string} absolute path of a directory holding `node`
 * @throws {Error} when npm cannot fetch it or the binary does not report `version`
 */
export function nodeBin(version) {
  const pkg = binaryPackage();
  const cache = process.env.TOLLGATE_CACHE_DIR || path.join(os.homedir(), ".cache", "tollgate");
  const dir = path.join(cache, "node", `${version}-${process.platform}-${process.arch}`);
  const bin = path.join(dir, "bin");
  if (!existsSync(path.join(bin, "node"))) {
    mkdirSync(path.dirname(dir), { recursive: true });
    const tmp = mkdtempSync(`${dir}.tmp-`);
    try {
      // Inside an npm lifecycle script, the npm that runs it (same registry and CA settings).
      const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];
      const out = execFileSync(npm[0], [...npm.slice(1), "pack", "--silent", `${pkg}@${version}`], {
        cwd: tmp,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
      const tgz = out.trim().split("\n").pop();
      execFileSync("tar", ["-xzf", path.join(tmp, tgz), "-C", tmp, "package/bin/node"], { stdio: "pipe" });
      mkdirSync(path.join(tmp, "out"));
      renameSync(path.join(tmp, "package", "bin"), path.join(tmp, "out", "bin"));
      try {
        renameSync(path.join(tmp, "out"), dir);
      } catch (err) {
        if (!existsSync(path.join(bin, "node"))) throw err; // else: another run got there first
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const reported = execFileSync(path.join(bin, "node"), ["--version"], { encoding: "utf8" }).trim();
  if (reported !== `v${version}`) throw new Error(`${path.join(bin, "node")} reports ${reported}, not v${version}`);
  return bin;
}

/**
 * npm postinstall: link node_modules/.bin/node to the pinned release when this Node.js is too
 * old; remove a link into the cache when it is recent enough.
 * @returns {string | undefined} what it did, one line, or undefined when nothing was needed
 */
export function ensure() {
  const { range, pinned } = projectNode();
  const link = path.resolve("node_modules", ".bin", "node");
  const ours = (() => {
    try {
      return lstatSync(link).isSymbolicLink() && readlinkSync(link).includes(`${path.sep}node${path.sep}`);
    } catch {
      return false;
    }
  })();
  // npm puts node_modules/.bin first on the PATH of lifecycle scripts: run through our own link,
  // this Node.js is the fetched one, not the machine's — keep the link (removing it here made every
  // second `npm install` undo the first).
  if (ours && realpathSync(process.execPath) === realpathSync(link)) return undefined;
  if (!tooOld(process.version, range, pinned)) {
    if (ours) rmSync(link);
    return ours ? `removed ${link} (Node.js ${process.version} satisfies ${range})` : undefined;
  }
  const bin = nodeBin(pinned);
  mkdirSync(path.dirname(link), { recursive: true });
  rmSync(link, { force: true });
  symlinkSync(path.join(bin, "node"), link);
  return `Node.js ${process.version} is older than ${range}: npm scripts run Node.js ${pinned} (${link} -> ${path.join(bin, "node")})`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, arg] = process.argv.slice(2);
  try {
    if (command === "ensure") {
      const did = ensure();
      if (did) console.error(`tollgate: ${did}`);
    } else if (command === "check") {
      const { range, pinned } = projectNode();
      const line = tooOld(process.version, range, pinned);
      if (line) {
        console.error(line);
        process.exit(1);
      }
    } else if (command === "bin") {
      console.log(nodeBin(arg ?? projectNode().pinned));
    } else {
      console.error("usage: node scripts/node-lts.mjs ensure | check | bin [VERSION]");
      process.exit(2);
    }
  } catch (err) {
    const { range, pinned } = projectNode();
    console.error(
      `tollgate: cannot get Node.js ${arg ?? pinned} from the npm registry (${String(err?.message ?? err).split("\n")[0]}): install Node.js ${floorMajor(range)} or later and run \`npm install\` again`,
    );
    process.exit(1);
  }
}
