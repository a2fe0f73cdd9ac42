/**
 * What every kind's mapping (operator/controllers/<kind>/mapping.ts) shares: the `managed_by`
 * owner string, the service-side name of a namespaced resource, and copying only the keys a
 * resource sets (so a body only overrides what the resource says).
 */

/** Prefix of `managed_by` for everything the operator writes. */
export const MANAGED_BY_PREFIX = "tollgate-operator";

/** `managed_by` of a resource: `tollgate-operator/<namespace>/<name>` (cluster-scoped: `tollgate-operator/<name>`). */
export const managedBy = (meta: { name: string; namespace?: string }): string =>
  meta.namespace
    ? `${MANAGED_BY_PREFIX}/${meta.namespace}/${meta.name}`
    : `${MANAGED_BY_PREFIX}/${meta.name}`;

/** Service-side name of a namespaced resource: `<namespace>.<name>` (unique per organization). */
export const serviceName = (meta: { name: string; namespace?: string }): string =>
  meta.namespace ? `${meta.namespace}.${meta.name}` : meta.name;

/** Copies `value` under `key` only when it is defined. */
export function put<T extends object, K extends string, V>(target: T, key: K, value: V | undefined): T {
  if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  return target;
}
