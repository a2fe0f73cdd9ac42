/**
 * The operator assembled (controller-runtime's manager): every replica serves the admission webhook (with its certificates and
 * caBundle) and the health/metrics endpoints, and competes for the leader Lease; the leader runs
 * the informers and the four reconcilers (Organization, GovernancePolicy, ApproverTeam,
 * Namespace API keys) over one work queue (./controllers/setup.ts). Losing the Lease stops the reconcilers; a graceful
 * stop releases it so another replica takes over at once.
 */

import type { V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { CertMode, type OperatorConfig } from "./config.js";
import { type RunningControllers, startControllers } from "./controllers/setup.js";
import { AdminApiClient, tokenFromFile } from "./governance/client.js";
import { startHealthServer } from "./health.js";
import { describeKubeError, GroupObjects, isNotFound, loadKubeClients } from "./kube/clients.js";
import { EventRecorder } from "./kube/events.js";
import { type DelayFn, realDelay, startInformer } from "./kube/informer.js";
import { LeaderElector, type Lease } from "./leader/lease.js";
import { createOperatorLogger } from "./log.js";
import { createOperatorMetrics, type OperatorMetrics } from "./metrics.js";
import { serviceDnsNames } from "./webhook/certs.js";
import type { NamespaceLike } from "./webhook/patch.js";
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

/** Starts one operator replica. */
export async function startOperator(opts: StartOperatorOptions): Promise<RunningOperator> {
  const { config } = opts;
  const log = opts.log ?? createOperatorLogger({ level: config.logLevel });
  const delay = opts.delay ?? realDelay;
  const clients = loadKubeClients(config.kubeconfigPath);
  const { kc, core, json } = clients;
  const metrics = createOperatorMetrics({ defaultMetrics: opts.defaultMetrics });
  const governance = new AdminApiClient({
    baseUrl: config.serviceUrl,
    token: tokenFromFile(config.adminTokenFile),
  });
  const events = new EventRecorder(json, "tollgate-operator", config.identity, log);
  const cleanups: Array<() => Promise<void>> = [
    async () => governance.close(),
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

    // caBundle: published whenever the sidecar injector's MutatingWebhookConfiguration or the
    // policy validator's ValidatingWebhookConfiguration appears or changes.
    const caTargets = [
      { plural: "mutatingwebhookconfigurations", name: config.webhook.configurationName },
      { plural: "validatingwebhookconfigurations", name: config.webhook.policyValidatorName },
    ].map((t) => ({
      ...t,
      objects: new GroupObjects<WebhookConfigurationObject>(
        json,
        { group: "admissionregistration.k8s.io", version: "v1", plural: t.plural },
        false,
      ),
    }));
    let publishing = Promise.resolve();
    const publish = (only?: (typeof caTargets)[number]) => {
      if (config.webhook.certMode !== CertMode.selfSigned || !serving.caCert) return;
      const ca = serving.caCert;
      for (const t of only ? [only] : caTargets) {
        publishing = publishing
          .then(() => publishCaBundle(t.objects, t.name, ca, log))
          .then(() => undefined)
          .catch((err) =>
            log.warn({ err: (err as Error).message, configuration: t.name }, "caBundle not published"),
          );
      }
    };
    if (config.webhook.certMode === CertMode.selfSigned) {
      for (const t of caTargets) {
        const configInformer = startInformer<WebhookConfigurationObject & { metadata?: { name?: string } }>({
          kc,
          path: t.objects.watchPath,
          list: () => t.objects.list(),
          log,
          delay,
          onAdd: (c) => c.metadata?.name === t.name && publish(t),
          onUpdate: (c) => c.metadata?.name === t.name && publish(t),
        });
        cleanups.push(() => configInformer.stop());
      }
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
    let controllers: RunningControllers | undefined;
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
          governance,
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
