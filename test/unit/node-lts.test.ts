/**
 * The Node.js the project runs on (scripts/node-lts.mjs, docs/adr/0009-node-lts.md): on a machine
 * whose Node.js is older than package.json's engines floor, `npm install` (postinstall `ensure`)
 * links node_modules/.bin/node to the pinned release from the npm registry, so `npm run demo` and
 * `npm test` run on it; `check` (pretest, predemo) fails at once with one line saying what to run.
 * An older Node.js is simulated by overriding `process.version` before the script loads; nothing
 * here reaches the network (a fake binary stands in the cache, an unreachable registry for a miss).
 * Also: every place that names the Node.js line (engines, .node-version, the Dockerfile's base,
 * the SDK's engines, .ci/run's other LTS line) agrees.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const script = path.join(root, "scripts/node-lts.mjs");
const pinned = readFileSync(path.join(root, ".node-version"), "utf8").trim();
const engines = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).engines.node as string;
const tmp = mkdtempSync(path.join(os.tmpdir(), "tg-node-lts-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs scripts/node-lts.mjs with `process.version` reading `version` (unless undefined). */
function runScript(
  args: string[],
  opts: { version?: string; cwd?: string; env?: Record<string, string> } = {},
) {
  const fake = opts.version
    ? ["--import", `data:text/javascript,Object.defineProperty(process,"version",{value:"${opts.version}"})`]
    : [];
  const r = spawnSync(process.execPath, [...fake, script, ...args], {
    cwd: opts.cwd ?? root,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmp, ...opts.env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the project's Node.js line", () => {
  it("is one line everywhere: engines, .node-version, the Dockerfile's base, the SDK, CI's other LTS", () => {
    expect(engines).toBe(">=24");
    const major = Number(pinned.split(".")[0]);
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(major).toBe(24);
    const froms = [...readFileSync(path.join(root, "Dockerfile"), "utf8").matchAll(/^FROM (node:\S+)/gm)].map(
      (m) => m[1],
    );
    expect(froms).toEqual([`node:${major}-bookworm-slim`, `node:${major}-bookworm-slim`]);
    const sdk = JSON.parse(readFileSync(path.join(root, "packages/sdk/package.json"), "utf8"));
    expect(sdk.engines.node).toBe(engines);
    const other = /^OTHER_LTS="(\d+)\.\d+\.\d+"$/m.exec(
      readFileSync(path.join(root, ".ci/run"), "utf8"),
    )?.[1];
    expect(Number(other)).toBeGreaterThan(major);
    expect(Number(other) % 2).toBe(0); // LTS lines are the even ones
  });

  it("check: Node.js 20 fails at once with one line saying what to run", () => {
    const r = runScript(["check"], { version: "v20.20.2" });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trimEnd().split("\n")).toEqual([
      `tollgate needs Node.js >=24 (this is v20.20.2): run \`npm install\` (it fetches Node.js ${pinned} from the npm registry for the npm scripts) or install Node.js 24 or later`,
    ]);
  });

  it("check: Node.js 22 fails too; 24 and 26 pass silently", () => {
    expect(runScript(["check"], { version: "v22.22.0" }).status).toBe(1);
    for (const version of ["v24.0.0", "v26.12.1"]) {
      const r = runScript(["check"], { version });
      expect({ version, status: r.status, stderr: r.stderr }).toEqual({ version, status: 0, stderr: "" });
    }
  });

  it("ensure (npm postinstall) on Node.js 20 links node_modules/.bin/node to the cached pinned release; on 24 it removes the link", () => {
    const cache = path.join(tmp, "cache");
    const bin = path.join(cache, "node", `${pinned}-${process.platform}-${process.arch}`, "bin");
    mkdirSync(bin, { recursive: true });
    // A stand-in for the cached binary: ensure checks that it reports the pinned version.
    writeFileSync(path.join(bin, "node"), `#!/bin/sh\necho v${pinned}\n`);
    chmodSync(path.join(bin, "node"), 0o755);
    const project = path.join(tmp, "project");
    mkdirSync(project);
    const env = { TOLLGATE_CACHE_DIR: cache };

    const old = runScript(["ensure"], { version: "v20.20.2", cwd: project, env });
    expect(old.status, old.stderr).toBe(0);
    const link = path.join(project, "node_modules/.bin/node");
    expect(readlinkSync(link)).toBe(path.join(bin, "node"));
    expect(old.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(old.stderr).toContain(`npm scripts run Node.js ${pinned}`);
    // Idempotent (every `npm install` runs it).
    expect(runScript(["ensure"], { version: "v20.20.2", cwd: project, env }).status).toBe(0);
    expect(readlinkSync(link)).toBe(path.join(bin, "node"));

    const current = runScript(["ensure"], { version: "v24.21.0", cwd: project, env });
    expect(current.status, current.stderr).toBe(0);
    expect(() => lstatSync(link)).toThrow(/ENOENT/);
    // Nothing to do: silent.
    expect(runScript(["ensure"], { version: "v24.21.0", cwd: project, env }).stderr).toBe("");
  });

  it("ensure: a binary that does not report the pinned version is refused with one line", () => {
    const cache = path.join(tmp, "cache-wrong");
    const bin = path.join(cache, "node", `${pinned}-${process.platform}-${process.arch}`, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "node"), "#!/bin/sh\necho v20.20.2\n");
    chmodSync(path.join(bin, "node"), 0o755);
    const project = path.join(tmp, "project-wrong");
    mkdirSync(project);
    const r = runScript(["ensure"], {
      version: "v20.20.2",
      cwd: project,
      env: { TOLLGATE_CACHE_DIR: cache },
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^tollgate: cannot get Node\.js .* reports v20\.20\.2.*install Node\.js 24 or later/,
    );
    expect(() => lstatSync(path.join(project, "node_modules/.bin/node"))).toThrow(/ENOENT/);
  });

  it("ensure: when the registry cannot be reached it fails at once with one line", () => {
    const project = path.join(tmp, "project-offline");
    mkdirSync(project);
    const r = runScript(["ensure"], {
      version: "v20.20.2",
      cwd: project,
      env: {
        TOLLGATE_CACHE_DIR: path.join(tmp, "cache-empty"),
        npm_config_cache: path.join(tmp, "npm-cache-empty"),
        npm_config_registry: "http://127.0.0.1:9/",
        npm_config_fetch_retries: "0",
        npm_config_offline: "false",
      },
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^tollgate: cannot get Node\\.js ${pinned.replaceAll(".", "\\.")} from the npm registry .*run \`npm install\` again$`,
        "m",
      ),
    );
    expect(() => lstatSync(path.join(project, "node_modules/.bin/node"))).toThrow(/ENOENT/);
  });
});
