/**
 * The demo's processes: the governance service, the sidecar and the agent each run as a real
 * child process (as in a pod: they meet over HTTP and gRPC only). A {@link Supervisor} starts
 * them, keeps their output for error reports, and stops them all — in reverse order of start —
 * when the demo ends, on SIGINT/SIGTERM, and (as a last resort) when the demo's own process exits.
 *
 * Each child leads its own process group, so a Ctrl-C in the terminal reaches the demo alone and
 * the demo decides the order of shutdown; after a child exited, whatever it left in its group
 * (the sidecar's MCP servers, say) is killed, so no process outlives the demo.
 */
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";

/** Repository root (src/demo/../..). */
export const ROOT = path.resolve(import.meta.dirname, "../..");

/** A failure the demo explains itself (printed without a stack trace). */
export class DemoError extends Error {
  override name = "DemoError";
}

/** A child process and everything it printed. */
export interface DemoProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** stdout and stderr as received (stdout only when the caller consumes it). */
  output(): string;
  /** Resolves with the exit code (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process and its group are gone. */
  stop(graceMs?: number): Promise<void>;
}

/** How to start one child process. */
export interface StartOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /** Leave stdout to the caller (`child.stdout`) instead of collecting it. */
  pipeStdout?: boolean;
}

/** Sends `signal` to the process group led by `pid`; false when nothing is left in it. */
function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Starts `command args` from the repository root as the leader of a new process group. */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  opts: StartOptions = {},
): DemoProcess {
  let out = "";
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  if (!opts.pipeStdout) child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => {
    child.once("error", (err) => {
      out += `${name}: ${err.message}\n`;
      resolve(127);
    });
    child.once("exit", (code) => resolve(code));
  });
  const alive = () => child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  return {
    name,
    child,
    output: () => out,
    exited,
    async stop(graceMs = 15_000) {
      if (alive()) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => signalGroup(child.pid!, "SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      if (child.pid !== undefined) signalGroup(child.pid, "SIGKILL");
    },
  };
}

/** Starts `node --import tsx <script> [args]`, the way the image's processes run from source. */
export function startTsx(name: string, script: string, args: string[], opts: StartOptions = {}): DemoProcess {
  return startProcess(name, process.execPath, ["--import", "tsx", script, ...args], opts);
}

/**
 * Owns the demo's child processes and its clean-up. `shutdown()` is idempotent: the first call
 * stops every process (last started first) and then runs the deferred clean-ups.
 */
export class Supervisor {
  private readonly procs: DemoProcess[] = [];
  private readonly cleanups: (() => void)[] = [];
  private stopping: Promise<void> | undefined;

  /** Starts a child process (see {@link startProcess}) that shutdown() will stop. */
  start(name: string, command: string, args: string[], opts?: StartOptions): DemoProcess {
    if (this.stopping) throw new DemoError(`not starting ${name}: the demo is shutting down`);
    const p = startProcess(name, command, args, opts);
    this.procs.push(p);
    return p;
  }

  /** True once shutdown() was called. */
  get shuttingDown(): boolean {
    return this.stopping !== undefined;
  }

  /** Runs `fn` at shutdown, after every process stopped. */
  defer(fn: () => void): void {
    this.cleanups.push(fn);
  }

  /** Stops every process, last started first, then runs the deferred clean-ups. */
  shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      for (const p of [...this.procs].reverse()) await p.stop();
      for (const fn of this.cleanups.splice(0).reverse()) fn();
    })();
    return this.stopping;
  }

  /**
   * Synchronous last resort (process "exit" before shutdown() finished): SIGKILL to every group
   * still there, then the deferred clean-ups that have not run.
   */
  killRemaining(): void {
    for (const p of this.procs) if (p.child.pid !== undefined) signalGroup(p.child.pid, "SIGKILL");
    for (const fn of this.cleanups.splice(0).reverse()) {
      try {
        fn();
      } catch {}
    }
  }
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

/** Polls `url` until it answers 2xx; throws (with the process output) when `proc` exits or after `timeoutMs`. */
export async function waitHttpReady(url: string, proc: DemoProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(5_000) })).ok) return;
    } catch {}
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new DemoError(
        `${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was ready:\n${proc.output()}`,
      );
    }
    if (Date.now() > deadline) throw new DemoError(`${proc.name} not ready at ${url}:\n${proc.output()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
