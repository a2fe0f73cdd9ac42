/**
 * Global setup of the `cluster` project: brings up the kind cluster with scripts/kind-up.sh
 * (node image, kind and tools from scripts/build-kind.sh's cache; the project's images built
 * from ./Dockerfile and loaded) and the test-only images (PostgreSQL from Debian's packages).
 * A cluster that cannot start FAILS the run: nothing here skips.
 *
 * Environment: TOLLGATE_TEST_CLUSTER (cluster name, default tollgate-test),
 * TOLLGATE_REUSE_CLUSTER=1 keeps an existing cluster of that name (default: a fresh one),
 * TOLLGATE_KEEP_CLUSTER=1 leaves it running afterwards (default: deleted).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CACHE = process.env.TOLLGATE_CACHE_DIR ?? path.join(os.homedir(), ".cache/tollgate");
const CLUSTER = process.env.TOLLGATE_TEST_CLUSTER ?? "tollgate-test";
const KUBECONFIG = path.join(CACHE, "kind", `${CLUSTER}.kubeconfig`);
const TAG = process.env.TOLLGATE_TEST_IMAGE_TAG ?? "cluster-test";

function sh(what: string, args: string[], env: NodeJS.ProcessEnv = {}): void {
  const t0 = Date.now();
  process.stderr.write(`[cluster] ${what}\n`);
  const r = spawnSync("bash", args, {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG, KIND_CLUSTER: CLUSTER, ...env },
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 3_600_000,
  });
  if (r.status !== 0) {
    throw new Error(
      `[cluster] ${what} failed (exit ${r.status ?? r.signal}): the kind cluster cannot start, so the cluster suite fails`,
    );
  }
  process.stderr.write(`[cluster] ${what}: ${Math.round((Date.now() - t0) / 1000)} s\n`);
}

export default function setup(): () => void {
  mkdirSync(path.dirname(KUBECONFIG), { recursive: true });
  if (process.env.TOLLGATE_REUSE_CLUSTER !== "1") {
    sh(`deleting any previous cluster ${CLUSTER}`, ["scripts/kind-up.sh", "--delete"]);
  }
  sh(`kind-up (cluster ${CLUSTER}, images ${TAG})`, ["scripts/kind-up.sh"], {
    TOLLGATE_KIND_INSTALL: "0",
    TOLLGATE_IMAGE_TAG: TAG,
  });
  sh("test images", ["test/cluster/build-test-images.sh", CLUSTER]);
  return () => {
    if (process.env.TOLLGATE_KEEP_CLUSTER === "1") return;
    sh(`deleting cluster ${CLUSTER}`, ["scripts/kind-up.sh", "--delete"]);
  };
}
