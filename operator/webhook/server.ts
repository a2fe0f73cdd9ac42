/**
 * The operator's admission webhooks: an HTTPS server (Fastify) answering admission.k8s.io/v1
 * AdmissionReviews.
 * - POST /mutate, the sidecar injector: a base64 JSONPatch built by the pure builder in
 *   ./patch.ts. The namespace's labels come from the operator's namespace cache (an API read on
 *   a miss). Denials carry a message naming the annotation or label at fault.
 * - POST /validate-governancepolicy, the policy validator (./policy-validation.ts): refuses a
 *   GovernancePolicy whose CEL expression does not compile, naming the rule and the position.
 */
import Fastify, { type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { z } from "zod";
import { AdmissionOutcome, type OperatorMetrics } from "../metrics.js";
import { MUTATE_PATH, VALIDATE_POLICY_PATH } from "./configuration.js";
import { buildInjection, type NamespaceLike, type PodLike } from "./patch.js";
import { reviewPolicy } from "./policy-validation.js";
import type { InjectionConfig } from "./sidecar.js";
import type { ServingCert } from "./tls.js";

/** The parts of an AdmissionReview request the webhook reads. */
export const AdmissionReviewSchema = z.object({
  apiVersion: z.literal("admission.k8s.io/v1"),
  kind: z.literal("AdmissionReview"),
  request: z.looseObject({
    uid: z.string().min(1),
    kind: z.looseObject({ group: z.string(), version: z.string(), kind: z.string() }),
    namespace: z.string().optional(),
    operation: z.string(),
    object: z.looseObject({}).nullable().optional(),
  }),
});
export type AdmissionReview = z.infer<typeof AdmissionReviewSchema>;

/** The `response` of an AdmissionReview. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: "JSONPatch";
  patch?: string;
  status?: { code: number; message: string };
  warnings?: string[];
}

/** Where the webhook learns a namespace's labels: a cache, and the API server when the cache may be stale. */
export interface NamespaceSource {
  cached(name: string): Promise<NamespaceLike>;
  fresh(name: string): Promise<NamespaceLike>;
}

/**
 * Answers one review (pure apart from the namespace lookup): non-pod or non-CREATE requests
 * are allowed unchanged; pods are injected, skipped or denied by {@link buildInjection}. The API
 * server only sends pods of labelled namespaces or annotated pods, so when the cached labels say
 * "not selected" or "no organization", the namespace was probably just labelled: the decision is
 * made again with labels read from the API server.
 */
export async function review(
  req: AdmissionReview["request"],
  cfg: InjectionConfig,
  namespaces: NamespaceSource,
): Promise<{ response: AdmissionResponse; outcome: AdmissionOutcome }> {
  const uid = req.uid;
  if (req.kind.kind !== "Pod" || req.kind.group !== "" || req.operation !== "CREATE" || !req.object) {
    return { response: { uid, allowed: true }, outcome: AdmissionOutcome.skipped };
  }
  const pod = req.object as PodLike & { metadata?: { namespace?: string } };
  const nsName = req.namespace ?? pod.metadata?.namespace ?? "default";
  let decision = buildInjection(pod, await namespaces.cached(nsName), cfg);
  const maybeStale =
    (decision.kind === "skip" && decision.reason.startsWith("not selected")) ||
    (decision.kind === "deny" && decision.message.startsWith("tollgate: no organization"));
  if (maybeStale) decision = buildInjection(pod, await namespaces.fresh(nsName), cfg);
  switch (decision.kind) {
    case "skip":
      return { response: { uid, allowed: true }, outcome: AdmissionOutcome.skipped };
    case "deny":
      return {
        response: { uid, allowed: false, status: { code: 403, message: decision.message } },
        outcome: AdmissionOutcome.denied,
      };
    case "inject":
      return {
        response: {
          uid,
          allowed: true,
          patchType: "JSONPatch",
          patch: Buffer.from(JSON.stringify(decision.patch)).toString("base64"),
        },
        outcome: AdmissionOutcome.injected,
      };
  }
}

/** Options of {@link startWebhookServer}. */
export interface WebhookServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  tls: ServingCert;
  injection: InjectionConfig;
  namespaces: NamespaceSource;
  metrics: OperatorMetrics;
  log: Logger;
}

/** A running webhook server. */
export interface WebhookServer {
  app: FastifyInstance;
  /** The bound port. */
  port: number;
  /** Swaps the serving certificate without a restart. */
  setCertificate(tls: ServingCert): void;
  close(): Promise<void>;
}

/** Starts the HTTPS webhook server. */
export async function startWebhookServer(o: WebhookServerOptions): Promise<WebhookServer> {
  const app = Fastify({
    https: { cert: o.tls.cert, key: o.tls.key, minVersion: "TLSv1.2" },
    bodyLimit: 8 * 1024 * 1024,
    requestTimeout: 30_000,
    connectionTimeout: 35_000,
    keepAliveTimeout: 65_000,
    logger: false,
  });
  app.post(MUTATE_PATH, async (req, reply) => {
    const end = o.metrics.admissionDuration.startTimer();
    const parsed = AdmissionReviewSchema.safeParse(req.body);
    if (!parsed.success) {
      o.metrics.admissions.inc({ outcome: AdmissionOutcome.error });
      end();
      const issue = parsed.error.issues[0];
      return reply
        .code(400)
        .send({ message: `invalid AdmissionReview: ${issue?.path.join(".")}: ${issue?.message}` });
    }
    let result: { response: AdmissionResponse; outcome: AdmissionOutcome };
    try {
      result = await review(parsed.data.request, o.injection, o.namespaces);
    } catch (err) {
      o.log.error({ err: (err as Error).message, uid: parsed.data.request.uid }, "admission review failed");
      result = {
        response: {
          uid: parsed.data.request.uid,
          allowed: false,
          status: { code: 500, message: "tollgate: the sidecar injector failed; try again" },
        },
        outcome: AdmissionOutcome.error,
      };
    }
    if (result.outcome === AdmissionOutcome.denied) {
      o.log.info(
        { namespace: parsed.data.request.namespace, message: result.response.status?.message },
        "pod denied",
      );
    }
    o.metrics.admissions.inc({ outcome: result.outcome });
    end();
    return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: result.response };
  });
  app.post(VALIDATE_POLICY_PATH, async (req, reply) => {
    const parsed = AdmissionReviewSchema.safeParse(req.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return reply
        .code(400)
        .send({ message: `invalid AdmissionReview: ${issue?.path.join(".")}: ${issue?.message}` });
    }
    const response = reviewPolicy(parsed.data.request);
    if (!response.allowed) {
      o.log.info(
        { namespace: parsed.data.request.namespace, message: response.status?.message },
        "GovernancePolicy refused",
      );
    }
    return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
  });
  app.get("/healthz", async () => ({ status: "ok" }));
  await app.listen({ host: o.host, port: o.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : o.port;
  return {
    app,
    port,
    setCertificate(tls) {
      (
        app.server as unknown as { setSecureContext(o: { cert: string; key: string }): void }
      ).setSecureContext({
        cert: tls.cert,
        key: tls.key,
      });
    },
    close: () => app.close(),
  };
}
