/**
 * The pure admission patch builder: decides whether a Pod gets the Tollgate sidecar and builds the
 * RFC 6902 JSON Patch that injects it (the container and volumes of ./sidecar.ts). Every volume
 * is mounted into the sidecar container only: the agent's containers hold no Tollgate or tool
 * secret (issue 27).
 * Plain data in, plain data out; operator/webhook/server.ts does the I/O. The patch is not written
 * by hand: the builder mutates a copy of the pod and diffs it against the original with
 * fast-json-patch's `compare` (the habit of the field, e.g. pepr's mutate processor).
 *
 * Selection (DESIGN.md "Names"): pods of namespaces labelled `tollgate.dev/injection=enabled`, or
 * pods annotated `tollgate.dev/inject: "true"`; `tollgate.dev/inject: "false"` opts out. A pod
 * already carrying the marker annotation `tollgate.dev/injected` or a container named
 * `tollgate-sidecar` is never injected twice. Injected pods get the label
 * `tollgate.dev/sidecar: injected`, which the chart's PodMonitor selects.
 */
import jsonpatch, { type Operation } from "fast-json-patch";
import {
  Annotations,
  apiKeyVolume,
  credentialVolumes,
  type InjectionConfig,
  identityVolume,
  Labels,
  SIDECAR_CONTAINER,
  SIDECAR_LABEL_VALUE,
  SidecarAuth,
  SidecarMode,
  sidecarContainer,
} from "./sidecar.js";

/** The parts of a Pod the builder reads (core/v1 Pod as JSON). */
export interface PodLike {
  metadata?: {
    name?: string;
    generateName?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec?: {
    containers?: ContainerLike[];
    initContainers?: ContainerLike[];
    volumes?: Array<{ name: string }>;
  };
}

/** The parts of a container the builder reads: its name and the names of its ports. */
export interface ContainerLike {
  name: string;
  ports?: Array<{ name?: string }>;
}

/** The namespace the pod is created in (name and labels). */
export interface NamespaceLike {
  name: string;
  labels?: Record<string, string>;
}

/**
 * One RFC 6902 operation, as fast-json-patch types it. {@link buildInjection} produces `add`,
 * `replace` and `remove` (see there why a prepended container shows as more than one `add`).
 */
export type PatchOperation = Operation;

/** Result of {@link buildInjection}. */
export type InjectionDecision =
  | { kind: "inject"; patch: PatchOperation[]; organization: string; agentName: string }
  | { kind: "skip"; reason: string }
  | { kind: "deny"; message: string };

const SLUG = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

type Predicate = (pod: PodLike, ns: NamespaceLike) => string | null;

/** Skip predicates, run in order; the first that returns a reason skips injection. */
const skipPredicates: Predicate[] = [
  (pod) =>
    pod.metadata?.annotations?.[Annotations.inject] === "false"
      ? "opted out (tollgate.dev/inject=false)"
      : null,
  (pod) =>
    pod.metadata?.annotations?.[Annotations.injected] !== undefined
      ? "already injected (marker annotation)"
      : null,
  (pod) =>
    [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].some(
      (c) => c.name === SIDECAR_CONTAINER,
    )
      ? `already has a ${SIDECAR_CONTAINER} container`
      : null,
  (pod, ns) =>
    ns.labels?.[Labels.injection] === "enabled" || pod.metadata?.annotations?.[Annotations.inject] === "true"
      ? null
      : "not selected (namespace not labelled tollgate.dev/injection=enabled, pod not annotated tollgate.dev/inject=true)",
];

/** Why the pod is not injected, or null when it should be. */
export function skipReason(pod: PodLike, ns: NamespaceLike): string | null {
  for (const p of skipPredicates) {
    const reason = p(pod, ns);
    if (reason) return reason;
  }
  return null;
}

/**
 * The agent name: annotation tollgate.dev/agent-name, else the app.kubernetes.io/name or app label,
 * else generateName without the ReplicaSet's pod-template-hash and trailing dash, else the name.
 */
export function agentNameOf(pod: PodLike): string {
  const m = pod.metadata ?? {};
  const fromMeta =
    m.annotations?.[Annotations.agentName] ?? m.labels?.["app.kubernetes.io/name"] ?? m.labels?.app;
  if (fromMeta) return fromMeta;
  if (m.generateName) {
    let base = m.generateName.replace(/-+$/, "");
    const hash = m.labels?.["pod-template-hash"];
    if (hash && base.endsWith(`-${hash}`)) base = base.slice(0, -(hash.length + 1));
    if (base) return base;
  }
  return m.name ?? "";
}

/**
 * Port names the pod's own containers already use. A Service's named `targetPort` resolves to the
 * first container that declares the name, and in container mode the sidecar comes first: a name
 * the agent already uses must not be taken from it.
 */
export function takenPortNames(pod: PodLike): Set<string> {
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return new Set(containers.flatMap((c) => (c.ports ?? []).flatMap((p) => (p.name ? [p.name] : []))));
}

/**
 * Decides and builds the injection for a Pod being created in `ns`. Denies (with a message that
 * names the annotation or label) when injection is requested but the organization, agent name or
 * upstreams annotation is missing or invalid, or a volume name collides.
 *
 * The patch is `compare(pod, injected)`, where `injected` is a structuredClone of `pod` with the
 * marker annotations and the sidecar label merged in, the sidecar container first (the first init
 * container in native mode, else the first container) and its volumes appended. fast-json-patch
 * compares arrays index by index, so prepending the sidecar to an existing list shows as
 * `replace`/`remove`/`add` operations on the existing entries' fields plus an `add` at the old
 * length (never past the end); the API server applies them to the same pod, so the stored pod is
 * `injected`. Maps and lists the pod lacks are added whole; map keys are RFC 6901-escaped.
 */
export function buildInjection(pod: PodLike, ns: NamespaceLike, cfg: InjectionConfig): InjectionDecision {
  const reason = skipReason(pod, ns);
  if (reason) return { kind: "skip", reason };
  const annotations = pod.metadata?.annotations;

  const organization = annotations?.[Annotations.organization] ?? ns.labels?.[Labels.organization];
  if (!organization) {
    return {
      kind: "deny",
      message: `tollgate: no organization: set the pod annotation ${Annotations.organization} or the label ${Labels.organization} on namespace ${ns.name}`,
    };
  }
  if (!SLUG.test(organization) || organization.length > 63) {
    return {
      kind: "deny",
      message: `tollgate: ${Annotations.organization} must be an organization slug, got "${organization.slice(0, 80)}"`,
    };
  }
  const agentName = agentNameOf(pod);
  if (agentName.length < 1 || agentName.length > 200) {
    return { kind: "deny", message: `tollgate: ${Annotations.agentName} must be 1 to 200 characters` };
  }
  let upstreams: string | undefined;
  let parsedUpstreams: unknown;
  const rawUpstreams = annotations?.[Annotations.upstreams];
  if (rawUpstreams !== undefined) {
    try {
      parsedUpstreams = JSON.parse(rawUpstreams);
      if (parsedUpstreams === null || typeof parsedUpstreams !== "object")
        throw new Error("expected a JSON object or array");
      upstreams = JSON.stringify(parsedUpstreams);
    } catch (err) {
      return {
        kind: "deny",
        message: `tollgate: annotation ${Annotations.upstreams} is not valid JSON: ${(err as Error).message}`,
      };
    }
  }
  const credentials = credentialVolumes(parsedUpstreams);
  if ("error" in credentials) {
    return { kind: "deny", message: `tollgate: annotation ${Annotations.upstreams}: ${credentials.error}` };
  }
  const identity = cfg.auth === SidecarAuth.apiKey ? apiKeyVolume() : identityVolume(cfg);
  const addedVolumes = [identity, ...credentials.volumes];
  const collision = addedVolumes.find((a) => pod.spec?.volumes?.some((v) => v.name === a.name));
  if (collision) {
    return { kind: "deny", message: `tollgate: spec.volumes already has a volume named ${collision.name}` };
  }

  const native = cfg.mode === SidecarMode.native;
  const added: Record<string, string> = { [Annotations.injected]: "true" };
  // Container mode puts the sidecar first: keep `kubectl logs/exec` on the agent's container.
  const firstContainer = pod.spec?.containers?.[0]?.name;
  if (!native && firstContainer && annotations?.[Annotations.defaultContainer] === undefined)
    added[Annotations.defaultContainer] = firstContainer;
  const container = sidecarContainer(
    cfg,
    organization,
    agentName,
    upstreams,
    takenPortNames(pod),
    credentials.mounts,
  );

  const injected = structuredClone(pod) as MutablePod;
  const metadata = injected.metadata ?? {};
  injected.metadata = metadata;
  metadata.annotations = { ...metadata.annotations, ...added };
  metadata.labels = { ...metadata.labels, [Labels.sidecar]: SIDECAR_LABEL_VALUE };
  const spec = injected.spec ?? {};
  injected.spec = spec;
  if (native) spec.initContainers = [container, ...(spec.initContainers ?? [])];
  else spec.containers = [container, ...(spec.containers ?? [])];
  spec.volumes = [...(spec.volumes ?? []), ...addedVolumes];
  const patch = jsonpatch.compare(pod as object, injected as object);
  return { kind: "inject", patch, organization, agentName };
}

/** A copy of a pod that {@link buildInjection} adds to: lists of any entries, maps of strings. */
interface MutablePod {
  metadata?: NonNullable<PodLike["metadata"]>;
  spec?: { containers?: unknown[]; initContainers?: unknown[]; volumes?: unknown[] };
}

/**
 * Applies a JSON Patch to a copy of `doc` with fast-json-patch, validating each operation as the
 * API server does (what tests and the benchmark use to check the pod the API server will store).
 * Returns the new document; `doc` is not changed.
 * @throws fast-json-patch's JsonPatchError when an operation is invalid or its path does not
 *   resolve (e.g. a missing parent).
 */
export function applyPatch<T>(doc: T, patch: readonly PatchOperation[]): T {
  return jsonpatch.applyPatch(structuredClone(doc), [...patch], true, true).newDocument;
}
