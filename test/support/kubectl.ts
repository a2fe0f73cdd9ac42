/**
 * Runs the kubectl built by scripts/build-control-plane.sh against a test control plane.
 */
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import type { ControlPlane } from "./controlplane.ts";

/** Output of one kubectl invocation; a non-zero `code` is returned, not thrown. */
export interface KubectlResult {
  /** Everything kubectl wrote to stdout. */
  stdout: string;
  /** Everything kubectl wrote to stderr. */
  stderr: string;
  /** Exit code (128 + signal number if kubectl was killed, e.g. on timeout). */
  code: number;
}

/** Options for {@link kubectl}. */
export interface KubectlOptions {
  /** Written to kubectl's stdin (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** Kill kubectl after this many milliseconds (default 60 000). */
  timeoutMs?: number;
}

/**
 * Runs `<cp.binDir>/kubectl --kubeconfig <cp.kubeconfigPath> ...args` and resolves with
 * its output and exit code. Uses a discovery cache inside the control plane's temp dir so
 * runs never touch ~/.kube.
 */
export function kubectl(
  cp: Pick<ControlPlane, "binDir" | "kubeconfigPath" | "dir">,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  const bin = path.join(cp.binDir, "kubectl");
  const fullArgs = [
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--cache-dir=${path.join(cp.dir, "kubectl-cache")}`,
    ...args,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, fullArgs, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stdout.on("data", (c: string) => {
      stdout += c;
    });
    child.stderr.on("data", (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${bin}: ${err.message}`));
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const signo = signal ? (os.constants.signals[signal] ?? 1) : 0;
      resolve({ stdout, stderr, code: code ?? 128 + signo });
    });
    child.stdin.on("error", () => {
      /* kubectl may exit before reading stdin; the exit code tells the story */
    });
    child.stdin.end(opts.input ?? "");
  });
}
