/**
 * Wires the leader's controllers (kubebuilder's SetupWithManager): one informer per Tollgate kind
 * whose events, filtered by the predicates, put requests on one work queue; the four reconcilers
 * (Organization, GovernancePolicy, ApproverTeam, Namespace API keys) over it; an Organization's
 * change enqueues its dependents. The workers start once every cache is synced.
 */
import type { V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { OperatorConfig } from "../config.js";
import {
  type ApproverTeamSpec,
  type GovernancePolicySpec,
  GROUP,
  KINDS,
  type KindDefinition,
  type OrganizationSpec,
  type TollgateResource,
  VERSION,
} from "../crds/schema.js";
import type { AdminApiClient } from "../governance/client.js";
import { GroupObjects, type loadKubeClients } from "../kube/clients.js";
import type { EventRecorder } from "../kube/events.js";
import { type DelayFn, type RunningInformer, startInformer } from "../kube/informer.js";
import type { OperatorMetrics } from "../metrics.js";
import { Labels, SidecarAuth } from "../webhook/sidecar.js";
import { ApproverTeamReconciler } from "./approverteam/reconciler.js";
import { GovernancePolicyReconciler } from "./governancepolicy/reconciler.js";
import { NAMESPACE_KIND, NamespaceReconciler, namespaceOfInterest } from "./namespace/reconciler.js";
import { OrganizationReconciler } from "./organization/reconciler.js";
import { Controller } from "./runtime/controller.js";
import { AppliedGenerations } from "./runtime/predicates.js";
import { keyOf, requestFor } from "./runtime/reconcile.js";
import { WorkQueue } from "./runtime/workqueue.js";
import { dependentsNeedingWork, type OrganizationResource } from "./shared/organization-ref.js";

/** What {@link startControllers} needs from the operator. */
export interface ControllerDeps {
  config: OperatorConfig;
  clients: ReturnType<typeof loadKubeClients>;
  governance: AdminApiClient;
  events: EventRecorder;
  /** The namespace cache every replica keeps for the webhook. */
  namespaces: RunningInformer<V1Namespace>;
  metrics: OperatorMetrics;
  log: Logger;
  delay: DelayFn;
  /** Routes namespace events to the controllers (undefined: stop routing). */
  setNamespaceHandler(h: ((ns: V1Namespace) => void) | undefined): void;
}

/** The leader's running controllers. */
export interface RunningControllers {
  /** Resolves once the caches are synced and the workers run. */
  ready: Promise<void>;
  /** Stops the workers (waiting for in-flight reconciles) and the informers. */
  stop(): Promise<void>;
}

const keyFor = (kind: string, obj: { metadata?: { name?: string; namespace?: string } }) =>
  keyOf(requestFor(kind, obj));

/** Starts informers and reconcilers; the workers start once the caches are synced (`ready`). */
export function startControllers(d: ControllerDeps): RunningControllers {
  const { kc, json, core } = d.clients;
  const queue = new WorkQueue();
  const informers: Array<RunningInformer<never>> = [];

  const watch = <Spec>(def: KindDefinition) => {
    const objects = new GroupObjects<TollgateResource<Spec>>(
      json,
      { group: GROUP, version: VERSION, plural: def.plural },
      def.scope === "Namespaced",
    );
    const applied = new AppliedGenerations();
    const onChange = (obj: TollgateResource<Spec>) => {
      const key = keyFor(def.kind, obj);
      if (applied.wants(key, obj as TollgateResource)) queue.add(key);
    };
    const informer = startInformer<TollgateResource<Spec>>({
      kc,
      path: objects.watchPath,
      list: () => objects.list(),
      log: d.log,
      delay: d.delay,
      onAdd: onChange,
      onUpdate: onChange,
    });
    informers.push(informer as RunningInformer<never>);
    return { def, objects, informer, applied, events: d.events };
  };

  const orgs = watch<OrganizationSpec>(KINDS.Organization);
  const policies = watch<GovernancePolicySpec>(KINDS.GovernancePolicy);
  const teams = watch<ApproverTeamSpec>(KINDS.ApproverTeam);
  const organizations = orgs.informer;

  const enqueueDependents = (org: OrganizationResource) => {
    for (const p of dependentsNeedingWork(org, policies.informer.list()))
      queue.add(keyFor(KINDS.GovernancePolicy.kind, p));
    for (const t of dependentsNeedingWork(org, teams.informer.list()))
      queue.add(keyFor(KINDS.ApproverTeam.kind, t));
    for (const ns of d.namespaces.list()) {
      if (ns.metadata?.labels?.[Labels.organization] === org.spec?.slug)
        queue.add(keyFor(NAMESPACE_KIND, ns));
    }
  };
  const governance = d.governance;
  const controller = new Controller({
    queue,
    workers: d.config.workers,
    resyncMs: d.config.resyncMs,
    metrics: d.metrics,
    log: d.log,
    reconcilers: [
      new OrganizationReconciler({ ...orgs, governance, enqueueDependents }),
      new GovernancePolicyReconciler({ ...policies, governance, organizations }),
      new ApproverTeamReconciler({ ...teams, governance, organizations }),
      new NamespaceReconciler({
        core,
        namespaces: d.namespaces,
        organizations,
        governance,
        events: d.events,
        mintApiKeys: d.config.sidecar.auth === SidecarAuth.apiKey,
      }),
    ],
  });
  d.setNamespaceHandler((ns) => {
    if (namespaceOfInterest(ns)) queue.add(keyFor(NAMESPACE_KIND, ns));
  });
  d.events.deferWhile(() => queue.length > 0 || queue.inFlight > 0);
  let stopped = false;
  const ready = Promise.all([...informers.map((i) => i.synced), d.namespaces.synced]).then(() => {
    if (stopped) return;
    controller.start();
    controller.resync();
    d.log.info("reconcilers running");
  });
  return {
    ready,
    async stop() {
      stopped = true;
      d.setNamespaceHandler(undefined);
      d.events.deferWhile(undefined);
      await controller.stop();
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
