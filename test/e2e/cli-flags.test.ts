/**
 * The four programs as an operator types them: `--version` and `--help` on the service, the
 * sidecar, the operator and the `tollgate` CLI, without any configuration; a bad flag or a
 * missing kubeconfig is one clear line naming what to fix (exit 2), never a stack trace.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const version = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).version as string;

/** Runs `node --import tsx <entry> ...args` with only PATH and HOME from this environment. */
const run = (entry: string, args: string[], env: Record<string, string> = {}) =>
  new Promise<{ code: number; out: string; err: string }>((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", entry, ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
        timeout: 60_000,
      },
      (e, out, err) => resolve({ code: e ? (typeof e.code === "number" ? e.code : 1) : 0, out, err }),
    ),
  );

const programs = [
  ["service", "src/service/main.ts"],
  ["sidecar", "sidecar/main.ts"],
  ["operator", "operator/main.ts"],
  ["tollgate CLI", "bin/tollgate.mjs"],
] as const;

describe("--version and --help need no configuration", () => {
  it.each(programs)("%s --version prints the package version", async (_name, entry) => {
    const r = await run(entry, ["--version"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim()).toBe(version);
  });

  it.each(programs)("%s --help describes its usage", async (_name, entry) => {
    const r = await run(entry, ["--help"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/Usage:/);
  });

  it("operator --help lists its environment, generated from the schema", async () => {
    const r = await run("operator/main.ts", ["--help"]);
    expect(r.out).toMatch(/TOLLGATE_SERVICE_URL\s+governance service base URL \(required\)/);
    expect(r.out).toMatch(/TOLLGATE_WEBHOOK_PORT\s+.*\[default: 9443\]/);
  });
});

describe("bad settings are one clear line", () => {
  it("service --port abc names the flag", async () => {
    const r = await run("src/service/main.ts", ["--port", "abc"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("--port: must be a port number (0-65535)");
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it("operator with a missing kubeconfig names KUBECONFIG", async () => {
    const r = await run("operator/main.ts", [], {
      KUBECONFIG: "/nonexistent/kubeconfig",
      TOLLGATE_SERVICE_URL: "http://127.0.0.1:1",
      TOLLGATE_ADMIN_TOKEN_FILE: "/nonexistent/token",
    });
    expect(r.code).toBe(2);
    expect(r.err).toContain("KUBECONFIG: cannot load /nonexistent/kubeconfig (ENOENT)");
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it("operator without its required variables names each of them", async () => {
    const r = await run("operator/main.ts", []);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/TOLLGATE_SERVICE_URL: /);
    expect(r.err).toMatch(/TOLLGATE_ADMIN_TOKEN_FILE: /);
  });
});
