/**
 * Field builders every Tollgate CRD schema shares: CEL `x-kubernetes-validations`, list types,
 * names (DNS labels and subdomains, domains, emails) and the reference to an Organization.
 */
import { z } from "zod";

/** One CEL rule of `x-kubernetes-validations` (apiextensions.k8s.io/v1 ValidationRule). */
export interface CelRule {
  rule: string;
  message: string;
  /** JSONPath-like path relative to the node, reported as the failing field (e.g. `.reason`). */
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

/** zod `.meta()` payload that becomes `x-kubernetes-validations` in the generated CRD. */
export const cel = (...rules: CelRule[]) => ({ "x-kubernetes-validations": rules });

/** CEL transition rule: the field may be set once and never changed. */
export const immutable = (what: string) => cel({ rule: "self == oldSelf", message: `${what} is immutable` });

/** Marks a list whose items are unique scalars (the API server rejects duplicates). */
export const setList = { "x-kubernetes-list-type": "set" } as const;
/** Marks a list of objects keyed by `key` (the API server rejects duplicate keys). */
export const mapList = (key: string) => ({
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": [key],
});

export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
export const DNS_SUBDOMAIN = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
/** Lowercase domain name, optionally a `*.` wildcard (RE2-compatible: the API server evaluates it too). */
const DOMAIN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

export const slug = z.string().min(1).max(63).regex(DNS_LABEL, "must be a lowercase DNS label");
export const email = z.email().max(254);
export const domain = z
  .string()
  .min(1)
  .max(253)
  .regex(DOMAIN, "must be a lowercase domain name, optionally *.-prefixed");
export const word = z.string().min(1).max(200);

/** A reference to a cluster-scoped Organization resource by its metadata.name. */
export const OrganizationRefSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(253)
      .regex(DNS_SUBDOMAIN, "must be a lowercase DNS subdomain")
      .describe("metadata.name of the Organization resource."),
  })
  .strict()
  .describe("The Organization this resource belongs to. Immutable.")
  .meta(immutable("organizationRef"));
