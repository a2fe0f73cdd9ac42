/**
 * A throwaway real PostgreSQL cluster for tests: initdb into a temp dir, started on a free
 * loopback port as the `postgres` OS user (PostgreSQL refuses to run as root). Fails loudly
 * when the server binaries are missing (CI must install Debian's postgresql package).
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";

/** A running cluster. `url` is a superuser connection string to database `postgres`. */
export interface PostgresCluster {
  url: string;
  port: number;
  binDir: string;
  /** Directory of the unix socket (`host` for a socket connection). */
  socketDir: string;
  stop(): Promise<void>;
}

/** Finds the newest /usr/lib/postgresql/N/bin, or PG_BIN_DIR. */
export function postgresBinDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) {
    const bin = path.join(root, v, "bin");
    if (existsSync(path.join(bin, "initdb"))) return bin;
  }
  throw new Error(
    "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PG_BIN_DIR). Install Debian's postgresql package: apt-get install -y postgresql",
  );
}

/** Returns a free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** How a test cluster trades durability for speed. */
export interface PostgresOptions {
  /**
   * Keep PostgreSQL's durable defaults (fsync, synchronous_commit, full_page_writes on), as a
   * production server runs. Default false: tests turn them off, since a crash loses nothing
   * they need.
   */
  durable?: boolean;
  /** Further server settings (`-c name=value`), e.g. shared_buffers. */
  settings?: Record<string, string>;
}

/** Starts a fresh cluster; resolves once it accepts connections. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresCluster> {
  const binDir = postgresBinDir();
  const dir = mkdtempSync(path.join(os.tmpdir(), "tollgate-pg-"));
  chmodSync(dir, 0o777);
  const dataDir = path.join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? (["runuser", ["-u", "postgres", "--", path.join(binDir, cmd), ...args]] as const)
      : ([path.join(binDir, cmd), args] as const);
  const [initCmd, initArgs] = run("initdb", [
    "-D",
    dataDir,
    "-U",
    "postgres",
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  execFileSync(initCmd, [...initArgs], { stdio: "pipe" });
  const port = await freePort();
  const [cmd, args] = run("postgres", [
    "-D",
    dataDir,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    `unix_socket_directories=${dir}`,
    ...(options.durable
      ? []
      : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
    ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    "-c",
    "max_connections=300",
  ]);
  const child = spawn(cmd, [...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  const pg = (await import("pg")).default;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL exited during start-up:\n${stderr}`);
    try {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.end();
      break;
    } catch {
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL did not accept connections within 30 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    binDir,
    socketDir: dir,
    async stop() {
      // runuser does not forward signals to postgres: ask pg_ctl (as the same user) to stop it.
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        const [stopCmd, stopArgs] = run("pg_ctl", ["-D", dataDir, "stop", "-m", "fast", "-w", "-t", "20"]);
        try {
          execFileSync(stopCmd, [...stopArgs], { stdio: "pipe", timeout: 30_000 });
        } catch {
          child.kill("SIGKILL");
        }
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
