/**
 * The MutatingWebhookConfiguration `tollgate-sidecar-injector` (pure builder; the Helm chart
 * renders the same shape, tests apply it with a `url:`). Two webhooks, both CREATE pods only,
 * sideEffects None, an explicit timeout, failurePolicy Fail, kube-system and the operator's
 * namespace excluded by namespaceSelector:
 * - `namespaces.sidecar.tollgate.dev`: namespaces labelled tollgate.dev/injection=enabled,
 *   except pods annotated tollgate.dev/inject=false (matchConditions).
 * - `pods.sidecar.tollgate.dev`: other namespaces, only pods annotated tollgate.dev/inject=true.
 */
import { Annotations, Labels } from "./sidecar.js";

/** Default name of the configuration. */
export const WEBHOOK_CONFIGURATION_NAME = "tollgate-sidecar-injector";
/** Path the operator serves AdmissionReviews on. */
export const MUTATE_PATH = "/mutate";

/** Where the API server sends reviews: a Service (in-cluster) or a URL (tests, out-of-cluster). */
export type WebhookClientTarget =
  | { service: { name: string; namespace: string; port: number } }
  | { url: string };

/** Options of {@link sidecarInjectorConfiguration}. */
export interface InjectorConfigurationOptions {
  name?: string;
  target: WebhookClientTarget;
  /** Namespace of the operator (excluded from injection). */
  operatorNamespace: string;
  /** PEM of the CA that signed the serving certificate; omitted when cert-manager injects it. */
  caPem?: string;
  /** `<namespace>/<certificate>` for cert-manager's CA injector. */
  certManagerCertificate?: string;
  /** Seconds the API server waits for the webhook (default 5, max 30). */
  timeoutSeconds?: number;
}

const annotation = (key: string) => `object.metadata.annotations['${key}']`;
const hasAnnotation = (key: string) =>
  `has(object.metadata.annotations) && '${key}' in object.metadata.annotations`;

/** Builds the MutatingWebhookConfiguration object. */
export function sidecarInjectorConfiguration(o: InjectorConfigurationOptions): Record<string, unknown> {
  const clientConfig: Record<string, unknown> =
    "url" in o.target ? { url: o.target.url } : { service: { ...o.target.service, path: MUTATE_PATH } };
  if (o.caPem) clientConfig.caBundle = Buffer.from(o.caPem).toString("base64");
  const excluded = {
    key: "kubernetes.io/metadata.name",
    operator: "NotIn",
    values: [...new Set(["kube-system", o.operatorNamespace])],
  };
  const common = {
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    timeoutSeconds: o.timeoutSeconds ?? 5,
    failurePolicy: "Fail",
    matchPolicy: "Equivalent",
    reinvocationPolicy: "Never",
    clientConfig,
    rules: [
      {
        operations: ["CREATE"],
        apiGroups: [""],
        apiVersions: ["v1"],
        resources: ["pods"],
        scope: "Namespaced",
      },
    ],
  };
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: {
      name: o.name ?? WEBHOOK_CONFIGURATION_NAME,
      labels: { "app.kubernetes.io/name": "tollgate", "app.kubernetes.io/component": "sidecar-injector" },
      ...(o.certManagerCertificate && {
        annotations: { "cert-manager.io/inject-ca-from": o.certManagerCertificate },
      }),
    },
    webhooks: [
      {
        name: "namespaces.sidecar.tollgate.dev",
        ...common,
        namespaceSelector: {
          matchExpressions: [{ key: Labels.injection, operator: "In", values: ["enabled"] }, excluded],
        },
        matchConditions: [
          {
            name: "not-opted-out",
            expression: `!(${hasAnnotation(Annotations.inject)}) || ${annotation(Annotations.inject)} != 'false'`,
          },
        ],
      },
      {
        name: "pods.sidecar.tollgate.dev",
        ...common,
        namespaceSelector: {
          matchExpressions: [{ key: Labels.injection, operator: "NotIn", values: ["enabled"] }, excluded],
        },
        matchConditions: [
          {
            name: "opted-in",
            expression: `${hasAnnotation(Annotations.inject)} && ${annotation(Annotations.inject)} == 'true'`,
          },
        ],
      },
    ],
  };
}
