/**
 * The real parts of bench/cluster: the kind cluster (its own, or a running one: bench/cluster/
 * env.ts) and, in it, the product as the chart installs it — release `tollgate-bench` in its own
 * namespace with the images built from ./Dockerfile, on PostgreSQL running in the cluster (the
 * image test/cluster/build-test-images.sh builds from Debian's packages), an Organization `bench`
 * and two namespaces: one labelled for injection (the agents), one not (the tool, and the
 * baseline pods). Every step registers how to undo it with the benchmark's teardown, so a
 * finished, failed or interrupted run leaves the cluster as it found it (or deletes it, when it
 * made it).
 */
import path from "node:path";
import {
  CHART_IMAGE_TAGS,
  CLUSTER,
  CRDS,
  GO_RELAY_IMAGE,
  helm,
  installPostgres,
  KUBECONFIG,
  k,
  kJson,
  kTry,
  POSTGRES_IMAGE,
  ROOT,
  run,
  TAG,
  waitFor,
} from "../../test/cluster/support.js";
import type { Teardown } from "../lib/parts.js";
import { progress } from "../lib/report.js";
import { REUSE } from "./env.js";

export const RELEASE = "tollgate-bench";
/** Namespaces: the release, the governed agents (labelled for injection), the plain ones. */
export const NS = {
  release: "tollgate-bench",
  agents: "tollgate-bench-agents",
  plain: "tollgate-bench-plain",
};
export const ORG = "bench";
/** The in-cluster PostgreSQL's password (a throwaway of the benchmark's own cluster). */
export const PG_PASSWORD = "tollgate-bench";
const INJECTOR_WEBHOOK = "namespaces.sidecar.tollgate.dev";

/** Runs a project script with the cluster's name and kubeconfig; throws with its stderr on failure. */
async function script(what: string, args: string[], env: Record<string, string> = {}): Promise<void> {
  const t0 = Date.now();
  progress(`${what} ...`);
  const r = await run("bash", args, {
    env: { KIND_CLUSTER: CLUSTER, KUBECONFIG, ...env },
    timeoutMs: 1_800_000,
  });
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}):\n${r.stderr.slice(-3000)}`);
  progress(`${what}: ${Math.round((Date.now() - t0) / 1000)} s`);
}

/**
 * The cluster: with TOLLGATE_BENCH_CLUSTER, checks that it answers; otherwise creates
 * `tollgate-bench` afresh (scripts/kind-up.sh without the chart, then the test images) and
 * registers its deletion. Returns whether the cluster is the benchmark's own.
 */
export async function bringUpCluster(stops: Teardown): Promise<boolean> {
  if (REUSE) {
    await k(["get", "--raw", "/readyz"]);
    progress(`reusing cluster ${CLUSTER} (images ghcr.io/tollgate/*:${TAG})`);
    const nodes = (await kJson(["get", "nodes"])).items as { status: { images?: { names?: string[] }[] } }[];
    const loaded = nodes.every((n) =>
      [POSTGRES_IMAGE, GO_RELAY_IMAGE].every((image) =>
        n.status.images?.some((i) => i.names?.includes(image)),
      ),
    );
    if (!loaded) await script("test images", [path.join(ROOT, "test/cluster/build-test-images.sh"), CLUSTER]);
    return false;
  }
  const kindUp = path.join(ROOT, "scripts/kind-up.sh");
  await script(`deleting any previous cluster ${CLUSTER}`, [kindUp, "--delete"]);
  stops.push(() => script(`deleting cluster ${CLUSTER}`, [kindUp, "--delete"]));
  await script(`kind-up (cluster ${CLUSTER}, images ${TAG})`, [kindUp], {
    TOLLGATE_KIND_INSTALL: "0",
    TOLLGATE_IMAGE_TAG: TAG,
  });
  await script("test images", [path.join(ROOT, "test/cluster/build-test-images.sh"), CLUSTER]);
  return true;
}

/** Waits (bounded) until `kubectl get args` finds nothing. */
const gone = (what: string, args: string[], timeoutMs: number) =>
  waitFor(
    what,
    async () => (await kTry(["get", ...args, "--ignore-not-found", "-o", "name"])).stdout.trim() === "",
    timeoutMs,
    1000,
  );

/**
 * Removes everything {@link installProduct} adds, whatever state a previous run left: the
 * governed namespace and the Organization first, while the operator still runs to release their
 * finalizers (it revokes the namespace's API key); then the release; then whatever finalizer no
 * operator is left to remove; the other namespaces; and the CRDs if this release installed them.
 * Each step is bounded and failures are ignored (best effort).
 */
export async function removeProduct(): Promise<void> {
  const quiet = (p: Promise<unknown>) => p.catch(() => undefined);
  await kTry(["delete", "namespace", NS.agents, "--ignore-not-found", "--wait=false"]);
  await kTry(["delete", "organization", ORG, "--ignore-not-found", "--wait=false"]);
  await quiet(
    gone(
      "the governed namespace and the Organization",
      [`namespace/${NS.agents}`, `organization/${ORG}`],
      60_000,
    ),
  );
  await quiet(
    helm(["uninstall", RELEASE, "-n", NS.release, "--ignore-not-found", "--wait", "--timeout", "3m"]),
  );
  const noFinalizers = '{"metadata":{"finalizers":null}}';
  await kTry(["patch", "namespace", NS.agents, "--type=merge", "-p", noFinalizers]);
  await kTry(["patch", "organization", ORG, "--type=merge", "-p", noFinalizers]);
  await kTry(["delete", "namespace", NS.plain, NS.release, "--ignore-not-found", "--wait=false"]);
  await quiet(gone("the benchmark's namespaces", ["namespace", NS.agents, NS.plain, NS.release], 180_000));
  const crd = await kTry([
    "get",
    "crd",
    CRDS[0]!,
    "-o",
    "jsonpath={.metadata.annotations.meta\\.helm\\.sh/release-name}",
  ]);
  if (crd.code === 0 && crd.stdout.trim() === RELEASE) {
    await kTry(["delete", "crd", ...CRDS, "--ignore-not-found", "--timeout=120s"], { timeoutMs: 130_000 });
  }
}

/**
 * Installs the product for the benchmark. In a reused cluster, first removes what an earlier
 * interrupted run may have left and registers {@link removeProduct} with the teardown (in its own
 * cluster, deleting the cluster undoes everything). Refuses to run beside another release's
 * sidecar injector: both would be called for the governed namespace's pods.
 */
export async function installProduct(stops: Teardown, own: boolean): Promise<void> {
  const webhooks = (await kJson(["get", "mutatingwebhookconfigurations"])).items as {
    metadata: { name: string };
    webhooks?: { name: string }[];
  }[];
  const others = webhooks.filter(
    (w) =>
      w.metadata.name !== `${RELEASE}-sidecar-injector` &&
      w.webhooks?.some((h) => h.name === INJECTOR_WEBHOOK),
  );
  if (others.length) {
    throw new Error(
      `another Tollgate sidecar injector is installed (${others.map((w) => w.metadata.name).join(", ")}): ` +
        "uninstall it first, or let the benchmark make its own cluster (unset TOLLGATE_BENCH_CLUSTER)",
    );
  }
  if (!own) {
    if (
      (
        await kTry(["get", "namespace", NS.release, NS.agents, NS.plain, "--ignore-not-found", "-o", "name"])
      ).stdout.trim()
    ) {
      progress("removing what an earlier run left");
      await removeProduct();
    }
    stops.push(removeProduct);
  }
  // CRDs: the chart installs them unless present (removeProduct deletes them again: they are kept
  // on uninstall, and another release could not adopt them).
  const crdsPresent = (await kTry(["get", "crd", CRDS[0]!])).code === 0;
  await k(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: NS.release } },
        {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: {
            name: NS.agents,
            labels: { "tollgate.dev/injection": "enabled", "tollgate.dev/organization": ORG },
          },
        },
        { apiVersion: "v1", kind: "Namespace", metadata: { name: NS.plain } },
      ],
    }),
  });
  const t0 = Date.now();
  await installPostgres(NS.release, PG_PASSWORD);
  progress(`PostgreSQL Ready: ${Math.round((Date.now() - t0) / 1000)} s`);
  const t1 = Date.now();
  await helm([
    "install",
    RELEASE,
    path.join(ROOT, "charts/tollgate"),
    "-n",
    NS.release,
    ...CHART_IMAGE_TAGS,
    "--set",
    "database.existingSecret=tollgate-postgres",
    "--set",
    `crds.enabled=${!crdsPresent}`,
    "--wait",
    "--timeout",
    "6m",
  ]);
  progress(`helm install ${RELEASE} --wait: ${Math.round((Date.now() - t1) / 1000)} s`);
  await k(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "Organization",
      metadata: { name: ORG },
      // Runaway limits off: the benchmark's chains are long.
      spec: {
        slug: ORG,
        displayName: "Bench",
        runawayLimits: { maxEvents: 0, maxDurationSeconds: 0, maxTokens: 0 },
      },
    }),
  });
  const t2 = Date.now();
  const ready = await kTry(["wait", "--for=condition=Ready", `organization/${ORG}`, "--timeout=120s"], {
    timeoutMs: 130_000,
  });
  if (ready.code !== 0) {
    throw new Error(
      `Organization ${ORG} not Ready within 120 s: ${ready.stderr.trim()}\n${await operatorState()}`,
    );
  }
  progress(`Organization ${ORG} Ready: ${Math.round((Date.now() - t2) / 1000)} s`);
  // Injected sidecars authenticate with their pods' service account tokens (the namespace's
  // organization label maps them): nothing else to wait for.
}

/**
 * What a failed wait on the operator needs to be understood: the Organization's conditions, the
 * release's pods (restarts included) and the last lines of the operator's and the service's logs
 * (best effort; a failed read is reported inline).
 */
async function operatorState(): Promise<string> {
  const status = await kTry(["get", "organization", ORG, "-o", "jsonpath={.status}"]);
  const table = await kTry(["-n", NS.release, "get", "pods", "-o", "wide"]);
  const pods = await kTry([
    "-n",
    NS.release,
    "get",
    "pods",
    "-l",
    "app.kubernetes.io/component in (operator,service)",
    "-o",
    "jsonpath={.items[*].metadata.name}",
  ]);
  const logs = await Promise.all(
    pods.stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(async (pod) => {
        const r = await kTry(["-n", NS.release, "logs", pod, "--tail=25"]);
        return `--- ${pod}\n${(r.code === 0 ? r.stdout : r.stderr).trim()}`;
      }),
  );
  return [
    `organization/${ORG} status: ${status.stdout || status.stderr}`,
    (table.stdout || table.stderr).trim(),
    ...logs,
  ].join("\n");
}
