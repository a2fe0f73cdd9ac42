/**
 * Runs a benchmark script (`bench/<name>/run.ts --quick`) as a child process WITHOUT blocking the
 * test worker: a synchronous spawn of a minute or more starves vitest's worker RPC ("Timeout
 * calling onTaskUpdate") on a loaded machine and fails the run although every test passed.
 * Resolves with the exit status (null when killed at `timeoutMs`, milliseconds) and the output.
 */
import { spawn } from "node:child_process";

export function runBench(
  script: string,
  args: string[],
  opts: { cwd: string; timeoutMs: number },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", script, ...args], {
      cwd: opts.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    p.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs);
    p.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
