/**
 * The least-privilege RBAC the operator needs (the Helm chart renders the same rules; a kube test
 * runs the operator as a user bound to exactly these). Secrets are limited by name where the
 * API allows it (create cannot be limited by name).
 */
import { GROUP, KINDS } from "./crds/schema.js";
import { POLICY_VALIDATOR_NAME, WEBHOOK_CONFIGURATION_NAME } from "./webhook/configuration.js";
import { API_KEY_SECRET } from "./webhook/sidecar.js";

/** A subject of a binding (ServiceAccount in a cluster; User in tests). */
export type RbacSubject =
  | { kind: "ServiceAccount"; name: string; namespace: string }
  | { kind: "User"; name: string; apiGroup: "rbac.authorization.k8s.io" };

/** Names the operator uses, for resourceNames. */
export interface RbacNames {
  /** ClusterRole/Role/binding name (default tollgate-operator). */
  name?: string;
  /** The operator's namespace (Lease, webhook TLS Secret). */
  namespace: string;
  leaseName?: string;
  tlsSecretName?: string;
  webhookConfigurationName?: string;
  policyValidatorName?: string;
}

const plurals = Object.values(KINDS).map((k) => k.plural);

/** ClusterRole, Role and their bindings for `subject`. */
export function operatorRbac(subject: RbacSubject, n: RbacNames): Record<string, unknown>[] {
  const name = n.name ?? "tollgate-operator";
  const labels = { "app.kubernetes.io/name": "tollgate", "app.kubernetes.io/component": "operator" };
  const clusterRole = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name, labels },
    rules: [
      { apiGroups: [GROUP], resources: plurals, verbs: ["get", "list", "watch", "patch", "update"] },
      { apiGroups: [GROUP], resources: plurals.map((p) => `${p}/status`), verbs: ["get", "patch", "update"] },
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list", "watch", "patch"] },
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: [API_KEY_SECRET],
        verbs: ["get", "update", "delete"],
      },
      { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["mutatingwebhookconfigurations"],
        verbs: ["list", "watch"],
      },
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["mutatingwebhookconfigurations"],
        resourceNames: [n.webhookConfigurationName ?? WEBHOOK_CONFIGURATION_NAME],
        verbs: ["get", "patch"],
      },
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["validatingwebhookconfigurations"],
        verbs: ["list", "watch"],
      },
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["validatingwebhookconfigurations"],
        resourceNames: [n.policyValidatorName ?? POLICY_VALIDATOR_NAME],
        verbs: ["get", "patch"],
      },
    ],
  };
  const role = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name, namespace: n.namespace, labels },
    rules: [
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        resourceNames: [n.leaseName ?? "tollgate-operator"],
        verbs: ["get", "update"],
      },
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: [n.tlsSecretName ?? "tollgate-webhook-tls"],
        verbs: ["get", "update"],
      },
    ],
  };
  const subjects = [subject];
  return [
    clusterRole,
    role,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name, namespace: n.namespace, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects,
    },
  ];
}
