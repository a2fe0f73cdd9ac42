/**
 * The demo's processes: the governance service (`src/service/main.ts` on embedded PGlite in a
 * temporary folder) and the sidecar (`sidecar/main.ts`), each a real child process started with
 * the repository's tsx, with their output kept for error reports.
 */
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";

/** Repository root (src/demo/../..). */
export const ROOT = path.resolve(import.meta.dirname, "../..");

/** A child process and everything it printed. */
export interface DemoProcess {
  name: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process exited. */
  stop(graceMs?: number): Promise<void>;
}

/** A free loopback TCP port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts `tsx <script>` from the repository root with `env` added to this process's environment. */
export function startTsx(name: string, script: string, env: Record<string, string>): DemoProcess {
  let out = "";
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => {
    out += d;
  });
  child.stderr!.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    name,
    child,
    output: () => out,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls `url` until it answers 2xx; throws (with the process output) when `proc` exits or after `timeoutMs`. */
export async function waitHttpReady(url: string, proc: DemoProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    if (proc.child.exitCode !== null) {
      throw new Error(`${proc.name} exited with code ${proc.child.exitCode}:\n${proc.output()}`);
    }
    if (Date.now() > deadline) throw new Error(`${proc.name} not ready at ${url}:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
