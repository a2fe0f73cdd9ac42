/**
 * The operator assembled: every replica serves the admission webhook (with its certificates and
 * caBundle) and the health/metrics endpoints, and competes for the leader Lease; the leader runs
 * the informers and the four reconcilers (Organization, GovernancePolicy, ApproverTeam,
 * Namespace API keys) over one work queue. Losing the Lease stops the reconcilers; a graceful
 * stop releases it so another replica takes over at once.
 */

import type { V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { CertMode, type OperatorConfig } from "./config.js";
import { Controller } from "./controller/controller.js";
import {
  approverTeamHandler,
  dependentsNeedingWork,
  type HandlerDeps,
  type OrganizationResource,
  organizationHandler,
  policyHandler,
} from "./controller/kinds.js";
import { NAMESPACE_KIND, NamespaceReconciler, namespaceOfInterest } from "./controller/namespace.js";
import { keyOf, WorkQueue } from "./controller/queue.js";
import { AppliedGenerations, ResourceReconciler } from "./controller/resource.js";
import {
  type ApproverTeamSpec,
  type GovernancePolicySpec,
  GROUP,
  KINDS,
  type KindDefinition,
  type TollgateResource,
  VERSION,
} from "./crds/schema.js";
import { startHealthServer } from "./health.js";
import { describeKubeError, GroupObjects, isNotFound, loadKubeClients } from "./kube/clients.js";
import { EventRecorder } from "./kube/events.js";
import { type DelayFn, type RunningInformer, realDelay, startInformer } from "./kube/informer.js";
import { LeaderElector, type Lease } from "./leader/lease.js";
import { createOperatorLogger } from "./log.js";
import { createOperatorMetrics, type OperatorMetrics } from "./metrics.js";
import { AdminApiClient, tokenFromFile } from "./service/client.js";
import { serviceDnsNames } from "./webhook/certs.js";
import { Labels, type NamespaceLike, SidecarAuth } from "./webhook/patch.js";
import { startWebhookServer } from "./webhook/server.js";
import {
  ensureWebhookPki,
  publishCaBundle,
  readCertDir,
  type ServingCert,
  type WebhookConfigurationObject,
} from "./webhook/tls.js";

/** Options of {@link startOperator}. */
export interface StartOperatorOptions {
  config: OperatorConfig;
  log?: Logger;
  /** Collect Node.js process metrics (default true; tests running several operators turn it off). */
  defaultMetrics?: boolean;
  /** Sleep function of informers and the elector (tests may inject one). */
  delay?: DelayFn;
  /** How often certificates are re-checked for rotation (ms, default 300 000). */
  certCheckIntervalMs?: number;
}

/** A running operator replica. */
export interface RunningOperator {
  config: OperatorConfig;
  metrics: OperatorMetrics;
  /** Bound HTTPS port of the webhook. */
  webhookPort: number;
  /** Bound HTTP port of /healthz, /readyz, /metrics. */
  healthPort: number;
  /** PEM of the CA that signed the webhook certificate (self-signed mode). */
  caCert?: string;
  /** Whether this replica leads and runs the reconcilers. */
  isLeader(): boolean;
  /** Resolves when this replica's reconcilers are running (after it became leader). */
  whenReconciling(): Promise<void>;
  /** Stops everything; a leader releases the Lease. */
  stop(): Promise<void>;
}

interface Controllers {
  /** Resolves once the caches are synced and the workers run. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/** Starts one operator replica. */
export async function startOperator(opts: StartOperatorOptions): Promise<RunningOperator> {
  const { config } = opts;
  const log = opts.log ?? createOperatorLogger({ level: config.logLevel });
  const delay = opts.delay ?? realDelay;
  const clients = loadKubeClients(config.kubeconfigPath);
  const { kc, core, json } = clients;
  const metrics = createOperatorMetrics({ defaultMetrics: opts.defaultMetrics });
  const service = new AdminApiClient({
    baseUrl: config.serviceUrl,
    token: tokenFromFile(config.adminTokenFile),
  });
  const events = new EventRecorder(json, "tollgate-operator", config.identity, log);
  const cleanups: Array<() => Promise<void>> = [
    async () => service.close(),
    async () => json.close(),
    async () => events.stop(),
  ];
  const stopAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  };

  try {
    // Namespace cache: the webhook (every replica) and the namespace reconciler (leader) share it.
    let onNamespace: ((ns: V1Namespace) => void) | undefined;
    const namespaces = startInformer<V1Namespace>({
      kc,
      path: "/api/v1/namespaces",
      list: () => core.listNamespace(),
      log,
      delay,
      onAdd: (ns) => onNamespace?.(ns),
      onUpdate: (ns) => onNamespace?.(ns),
      onDelete: (ns) => onNamespace?.(ns),
    });
    cleanups.push(() => namespaces.stop());
    let namespacesSynced = false;
    void namespaces.synced.then(() => {
      namespacesSynced = true;
    });

    // Webhook certificates and server.
    const hosts = [
      ...serviceDnsNames(config.webhook.serviceName, config.namespace),
      ...config.webhook.extraSans,
    ];
    const loadServing = async (): Promise<ServingCert> => {
      if (config.webhook.certMode === CertMode.certManager) return readCertDir(config.webhook.certDir);
      const pki = await ensureWebhookPki(core, config.namespace, config.webhook.tlsSecretName, hosts, log);
      return { cert: pki.cert, key: pki.key, caCert: pki.caCert };
    };
    let serving = await loadServing();
    const fresh = async (name: string): Promise<NamespaceLike> => {
      try {
        const ns = await core.readNamespace({ name });
        return { name, labels: ns.metadata?.labels ?? {} };
      } catch (err) {
        if (isNotFound(err)) return { name, labels: {} };
        throw new Error(`cannot read namespace ${name}: ${describeKubeError(err)}`);
      }
    };
    const namespaceSource = {
      fresh,
      cached: async (name: string): Promise<NamespaceLike> => {
        const cached = namespaces.get(name);
        return cached ? { name, labels: cached.metadata?.labels ?? {} } : fresh(name);
      },
    };
    const webhook = await startWebhookServer({
      host: config.webhook.host,
      port: config.webhook.port,
      tls: serving,
      injection: config.sidecar,
      namespaces: namespaceSource,
      metrics,
      log,
    });
    cleanups.push(() => webhook.close());

    // caBundle: published whenever the MutatingWebhookConfiguration appears or changes.
    const webhookConfigs = new GroupObjects<WebhookConfigurationObject>(
      json,
      { group: "admissionregistration.k8s.io", version: "v1", plural: "mutatingwebhookconfigurations" },
      false,
    );
    let publishing = Promise.resolve();
    const publish = () => {
      if (config.webhook.certMode !== CertMode.selfSigned || !serving.caCert) return;
      const ca = serving.caCert;
      publishing = publishing
        .then(() => publishCaBundle(webhookConfigs, config.webhook.configurationName, ca, log))
        .then(() => undefined)
        .catch((err) => log.warn({ err: (err as Error).message }, "caBundle not published"));
    };
    if (config.webhook.certMode === CertMode.selfSigned) {
      const configInformer = startInformer<WebhookConfigurationObject & { metadata?: { name?: string } }>({
        kc,
        path: webhookConfigs.watchPath,
        list: () => webhookConfigs.list(),
        log,
        delay,
        onAdd: (c) => c.metadata?.name === config.webhook.configurationName && publish(),
        onUpdate: (c) => c.metadata?.name === config.webhook.configurationName && publish(),
      });
      cleanups.push(() => configInformer.stop());
    }
    const certTimer = setInterval(() => {
      loadServing()
        .then((next) => {
          if (next.cert === serving.cert && next.key === serving.key) return;
          serving = next;
          webhook.setCertificate(next);
          log.info("webhook certificate reloaded");
          publish();
        })
        .catch((err) => log.warn({ err: (err as Error).message }, "certificate check failed"));
    }, opts.certCheckIntervalMs ?? 300_000);
    certTimer.unref();
    cleanups.push(async () => clearInterval(certTimer));

    const health = await startHealthServer({
      host: config.health.host,
      port: config.health.port,
      registry: metrics.registry,
      unready: () => (namespacesSynced ? [] : ["namespace cache not synced"]),
    });
    cleanups.push(() => health.app.close());

    // Leader election; the leader runs the reconcilers.
    let controllers: Controllers | undefined;
    let reconciling: () => void = () => {};
    let reconcilingPromise = new Promise<void>((r) => {
      reconciling = r;
    });
    const elector = new LeaderElector({
      leases: new GroupObjects<Lease>(
        json,
        { group: "coordination.k8s.io", version: "v1", plural: "leases" },
        true,
      ),
      namespace: config.namespace,
      name: config.lease.name,
      identity: config.identity,
      leaseDurationMs: config.lease.durationMs,
      renewDeadlineMs: config.lease.renewDeadlineMs,
      retryPeriodMs: config.lease.retryPeriodMs,
      log,
      delay,
      onStartedLeading: () => {
        metrics.leader.set(1);
        const started = startControllers({
          config,
          clients,
          service,
          events,
          namespaces,
          metrics,
          log,
          delay,
          setNamespaceHandler: (h) => {
            onNamespace = h;
          },
        });
        controllers = started;
        void started.ready.then(() => {
          if (controllers === started) reconciling();
        });
      },
      onStoppedLeading: async () => {
        metrics.leader.set(0);
        const running = controllers;
        controllers = undefined;
        reconcilingPromise = new Promise<void>((r) => {
          reconciling = r;
        });
        await running?.stop();
      },
    });
    elector.start();
    cleanups.push(() => elector.stop());

    log.info(
      {
        identity: config.identity,
        webhookPort: webhook.port,
        healthPort: health.port,
        namespace: config.namespace,
      },
      "operator started",
    );
    return {
      config,
      metrics,
      webhookPort: webhook.port,
      healthPort: health.port,
      caCert: serving.caCert,
      isLeader: () => elector.isLeader,
      whenReconciling: () => reconcilingPromise,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

interface ControllerDeps {
  config: OperatorConfig;
  clients: ReturnType<typeof loadKubeClients>;
  service: AdminApiClient;
  events: EventRecorder;
  namespaces: RunningInformer<V1Namespace>;
  metrics: OperatorMetrics;
  log: Logger;
  delay: DelayFn;
  setNamespaceHandler(h: ((ns: V1Namespace) => void) | undefined): void;
}

const objectKey = (kind: string, obj: { metadata?: { name?: string; namespace?: string } }) =>
  keyOf({ kind, namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" });

/** Starts informers and reconcilers; the workers start once the caches are synced (`ready`). */
function startControllers(d: ControllerDeps): Controllers {
  const { kc, json, core } = d.clients;
  const queue = new WorkQueue();
  const informers: Array<RunningInformer<never>> = [];

  const resource = <Spec>(def: KindDefinition) => {
    const objects = new GroupObjects<TollgateResource<Spec>>(
      json,
      { group: GROUP, version: VERSION, plural: def.plural },
      def.scope === "Namespaced",
    );
    const applied = new AppliedGenerations();
    const onChange = (obj: TollgateResource<Spec>) => {
      const key = objectKey(def.kind, obj);
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
    return { objects, informer, applied };
  };

  const orgs = resource<OrganizationResource["spec"]>(KINDS.Organization);
  const policies = resource<GovernancePolicySpec>(KINDS.GovernancePolicy);
  const teams = resource<ApproverTeamSpec>(KINDS.ApproverTeam);

  const deps: HandlerDeps = {
    service: d.service,
    organizations: orgs.informer as RunningInformer<OrganizationResource>,
    enqueueDependents(org) {
      for (const p of dependentsNeedingWork(org, policies.informer.list()))
        queue.add(objectKey("GovernancePolicy", p));
      for (const t of dependentsNeedingWork(org, teams.informer.list()))
        queue.add(objectKey("ApproverTeam", t));
      for (const ns of d.namespaces.list()) {
        if (ns.metadata?.labels?.[Labels.organization] === org.spec?.slug)
          queue.add(objectKey(NAMESPACE_KIND, ns));
      }
    },
  };
  const common = { events: d.events, log: d.log };
  const controller = new Controller({
    queue,
    workers: d.config.workers,
    resyncMs: d.config.resyncMs,
    metrics: d.metrics,
    log: d.log,
    reconcilers: [
      new ResourceReconciler({
        def: KINDS.Organization,
        ...orgs,
        handler: organizationHandler(deps),
        ...common,
      }),
      new ResourceReconciler({
        def: KINDS.GovernancePolicy,
        ...policies,
        handler: policyHandler(deps),
        ...common,
      }),
      new ResourceReconciler({
        def: KINDS.ApproverTeam,
        ...teams,
        handler: approverTeamHandler(deps),
        ...common,
      }),
      new NamespaceReconciler({
        core,
        namespaces: d.namespaces,
        organizations: deps.organizations,
        service: d.service,
        mintApiKeys: d.config.sidecar.auth === SidecarAuth.apiKey,
        ...common,
      }),
    ],
  });
  d.setNamespaceHandler((ns) => {
    if (namespaceOfInterest(ns)) queue.add(objectKey(NAMESPACE_KIND, ns));
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
