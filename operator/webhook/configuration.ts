/**
 * The MutatingWebhookConfiguration `tollgate-sidecar-injector` (pure builder; the Helm chart
 * renders the same shape, tests apply it with a `url:`). Two webhooks, both CREATE pods only,
 * sideEffects None, an explicit timeout, failurePolicy Fail, kube-system and the operator's
 * namespace excluded by namespaceSelector:
 * - `namespaces.sidecar.tollgate.dev`: namespaces labelled tollgate.dev/injection=enabled,
 *   except pods annotated tollgate.dev/inject=false (matchConditions).
 * - `pods.sidecar.tollgate.dev`: other namespaces, only pods annotated tollgate.dev/inject=true.
 * And the ValidatingWebhookConfiguration `tollgate-policy-validator` of GovernancePolicies
 * ({@link policyValidatorConfiguration}).
 */
import { Annotations, Labels } from "./sidecar.js";

/** Default name of the configuration. */
export const WEBHOOK_CONFIGURATION_NAME = "tollgate-sidecar-injector";
/** Path the operator serves AdmissionReviews on. */
export const MUTATE_PATH = "/mutate";
/** Default name of the ValidatingWebhookConfiguration of GovernancePolicies. */
export const POLICY_VALIDATOR_NAME = "tollgate-policy-validator";
/** Path the operator serves GovernancePolicy AdmissionReviews on. */
export const VALIDATE_POLICY_PATH = "/validate-governancepolicy";

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

/**
 * What every Tollgate webhook shares: AdmissionReview v1, sideEffects None, the timeout,
 * failurePolicy Fail, matchPolicy Equivalent, and the clientConfig of `path` (a URL target is
 * used as given).
 */
function webhookBase(o: InjectorConfigurationOptions, path: string): Record<string, unknown> {
  const clientConfig: Record<string, unknown> =
    "url" in o.target ? { url: o.target.url } : { service: { ...o.target.service, path } };
  if (o.caPem) clientConfig.caBundle = Buffer.from(o.caPem).toString("base64");
  return {
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    timeoutSeconds: o.timeoutSeconds ?? 5,
    failurePolicy: "Fail",
    matchPolicy: "Equivalent",
    clientConfig,
  };
}

/** kube-system and the operator's namespace, never sent to the webhooks. */
const excludedNamespaces = (o: InjectorConfigurationOptions) => ({
  key: "kubernetes.io/metadata.name",
  operator: "NotIn",
  values: [...new Set(["kube-system", o.operatorNamespace])],
});

/** metadata of a webhook configuration (labels, cert-manager's CA injection). */
const metadataOf = (o: InjectorConfigurationOptions, name: string, component: string) => ({
  name,
  labels: { "app.kubernetes.io/name": "tollgate", "app.kubernetes.io/component": component },
  ...(o.certManagerCertificate && {
    annotations: { "cert-manager.io/inject-ca-from": o.certManagerCertificate },
  }),
});

/** Builds the MutatingWebhookConfiguration object. */
export function sidecarInjectorConfiguration(o: InjectorConfigurationOptions): Record<string, unknown> {
  const excluded = excludedNamespaces(o);
  const common = {
    ...webhookBase(o, MUTATE_PATH),
    reinvocationPolicy: "Never",
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
    metadata: metadataOf(o, o.name ?? WEBHOOK_CONFIGURATION_NAME, "sidecar-injector"),
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

/**
 * The ValidatingWebhookConfiguration `tollgate-policy-validator` (the chart renders the same
 * shape): GovernancePolicy CREATE and UPDATE, only when the spec has a custom rule with an
 * expression and (on UPDATE) the spec changed (matchConditions: status and finalizer writes never
 * wait for the webhook); failurePolicy Fail, sideEffects None and the excluded namespaces as for
 * the sidecar injector. `name` names this configuration.
 */
export function policyValidatorConfiguration(o: InjectorConfigurationOptions): Record<string, unknown> {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: metadataOf(o, o.name ?? POLICY_VALIDATOR_NAME, "policy-validator"),
    webhooks: [
      {
        name: "governancepolicies.tollgate.dev",
        ...webhookBase(o, VALIDATE_POLICY_PATH),
        rules: [
          {
            operations: ["CREATE", "UPDATE"],
            apiGroups: ["tollgate.dev"],
            apiVersions: ["v1alpha1"],
            resources: ["governancepolicies"],
            scope: "Namespaced",
          },
        ],
        namespaceSelector: { matchExpressions: [excludedNamespaces(o)] },
        matchConditions: [{ name: "spec-has-expressions", expression: POLICY_MATCH_CONDITION }],
      },
    ],
  };
}

/** When the policy validator is asked (also in the chart's template). */
export const POLICY_MATCH_CONDITION =
  "(request.operation == 'CREATE' || object.spec != oldObject.spec) && has(object.spec.customRules) && object.spec.customRules.exists(r, has(r.expression))";
