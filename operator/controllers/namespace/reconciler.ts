/**
 * API keys for governed namespaces. A namespace labelled `tollgate.dev/organization=<slug>`
 * gets one client API key of that organization (service-side name
 * `tollgate-operator/namespace/<namespace>`), minted into the Secret `tollgate-api-key` (key
 * `api-key`) that injected sidecars mount. The key is re-minted when the namespace's annotation
 * `tollgate.dev/rotate-api-key` takes a new value, when the organization label changes, or when
 * the service no longer knows the key; every other active key of that name is revoked, so a key
 * minted before a crash cannot linger. Removing the label, or deleting the namespace, revokes the
 * key and deletes the Secret (the namespace carries the finalizer tollgate.dev/finalizer while
 * it holds a key). Only with sidecar auth `apiKey` (mintApiKeys): injected sidecars authenticate with
 * their pod's service account token by default and need no Secret (issue 27).
 */

import type { CoreV1Api, V1Namespace, V1Secret } from "@kubernetes/client-node";
import { FINALIZER } from "../../crds/schema.js";
import { type AdminApiClient, AdminApiError } from "../../governance/client.js";
import { describeKubeError, finalizersPatch, isNotFound, statusOf } from "../../kube/clients.js";
import type { EventRecorder } from "../../kube/events.js";
import type { RunningInformer } from "../../kube/informer.js";
import { API_KEY_SECRET, API_KEY_SECRET_KEY, Labels } from "../../webhook/sidecar.js";
import { isSynced } from "../runtime/conditions.js";
import type { Context, Reconciler, Request, Result } from "../runtime/reconcile.js";
import type { OrganizationResource } from "../shared/organization-ref.js";

/** Queue kind of namespaces. */
export const NAMESPACE_KIND = "Namespace";

/** Annotation on a namespace whose new value requests a new API key. */
export const ROTATE_ANNOTATION = "tollgate.dev/rotate-api-key";

/** Labels and annotations of the API-key Secret. */
export const SecretMeta = {
  managedByLabel: "app.kubernetes.io/managed-by",
  managedBy: "tollgate-operator",
  organization: "tollgate.dev/organization",
  keyId: "tollgate.dev/api-key-id",
  rotation: "tollgate.dev/rotation",
} as const;

/** Service-side name of the API key of a namespace. */
export const apiKeyName = (namespace: string) => `tollgate-operator/namespace/${namespace}`;

const SLUG = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/** The organization slug a namespace is governed by, or undefined. */
export function governingSlug(ns: V1Namespace): string | undefined {
  if (ns.metadata?.deletionTimestamp) return undefined;
  const slug = ns.metadata?.labels?.[Labels.organization];
  return slug && SLUG.test(slug) && slug.length <= 63 ? slug : undefined;
}

/** Whether a namespace event concerns the reconciler (governed, or still holding our finalizer). */
export const namespaceOfInterest = (ns: V1Namespace): boolean =>
  ns.metadata?.labels?.[Labels.organization] !== undefined ||
  (ns.metadata?.finalizers ?? []).includes(FINALIZER);

/** Options of {@link NamespaceReconciler}. */
export interface NamespaceReconcilerOptions {
  core: CoreV1Api;
  namespaces: RunningInformer<V1Namespace>;
  organizations: RunningInformer<OrganizationResource>;
  governance: AdminApiClient;
  events: EventRecorder;
  /** Delay before checking again while the organization is not synced (seconds, default 30). */
  waitForOrganizationSeconds?: number;
  /**
   * Mint namespace API keys (sidecar auth `apiKey`). Off (the default with service account token
   * auth): no key, no Secret; a key and Secret left from an earlier apiKey install are revoked and
   * deleted as for a namespace that is no longer governed.
   */
  mintApiKeys?: boolean;
}

/** Reconciles the API key of governed namespaces. */
export class NamespaceReconciler implements Reconciler {
  readonly kind = NAMESPACE_KIND;
  private readonly warned = new Map<string, string>();

  constructor(private readonly o: NamespaceReconcilerOptions) {}

  requests(): Request[] {
    return this.o.namespaces
      .list()
      .filter(namespaceOfInterest)
      .map((ns) => ({ kind: NAMESPACE_KIND, namespace: "", name: ns.metadata!.name! }));
  }

  async reconcile(ctx: Context, req: Request): Promise<Result> {
    const ns = this.o.namespaces.get(req.name);
    if (!ns?.metadata?.name) return {};
    const name = ns.metadata.name;
    const slug = this.o.mintApiKeys === false ? undefined : governingSlug(ns);
    const secret = await this.readSecret(name);
    const managed = secret?.metadata?.labels?.[SecretMeta.managedByLabel] === SecretMeta.managedBy;
    const hasFinalizer = (ns.metadata.finalizers ?? []).includes(FINALIZER);

    if (!slug) {
      if (!hasFinalizer && !managed) return {};
      await this.revokeAll(name, [
        secret?.metadata?.annotations?.[SecretMeta.organization],
        ns.metadata.labels?.[Labels.organization],
      ]);
      if (managed) await this.deleteSecret(name);
      if (hasFinalizer)
        await this.setFinalizers(
          ns,
          (ns.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
        );
      ctx.log.info("namespace API key revoked");
      return {};
    }

    const org = this.o.organizations
      .list()
      .find((o) => !o.metadata.deletionTimestamp && o.status?.organization === slug && isSynced(o.status));
    if (!org) {
      this.warnOnce(
        ctx,
        ns,
        "OrganizationNotReady",
        `No synced Organization with slug ${slug}; no API key yet`,
      );
      return { requeueAfter: this.o.waitForOrganizationSeconds ?? 30 };
    }
    if (secret && !managed) {
      this.warnOnce(
        ctx,
        ns,
        "SecretConflict",
        `Secret ${API_KEY_SECRET} exists and is not managed by the operator`,
      );
      return {};
    }
    this.warned.delete(name);
    if (!hasFinalizer) await this.setFinalizers(ns, [...(ns.metadata.finalizers ?? []), FINALIZER]);

    const rotation = ns.metadata.annotations?.[ROTATE_ANNOTATION] ?? "";
    const keyName = apiKeyName(name);
    const active = (await this.o.governance.listApiKeys(slug)).filter(
      (k) => k.name === keyName && !k.revoked_at,
    );
    const annotations = secret?.metadata?.annotations ?? {};
    const currentId =
      annotations[SecretMeta.organization] === slug ? annotations[SecretMeta.keyId] : undefined;
    const upToDate =
      currentId !== undefined &&
      active.some((k) => k.key_id === currentId) &&
      Boolean(secret?.data?.[API_KEY_SECRET_KEY]) &&
      (annotations[SecretMeta.rotation] ?? "") === rotation;
    if (upToDate) {
      for (const k of active)
        if (k.key_id !== currentId) await this.o.governance.revokeApiKey(slug, k.key_id);
      return {};
    }

    const minted = await this.o.governance.createApiKey(slug, keyName, "client");
    try {
      await this.writeSecret(name, secret, { slug, keyId: minted.key_id, apiKey: minted.api_key, rotation });
    } catch (err) {
      await this.o.governance.revokeApiKey(slug, minted.key_id).catch(() => undefined);
      throw err;
    }
    for (const k of active) await this.o.governance.revokeApiKey(slug, k.key_id);
    const previousOrg = annotations[SecretMeta.organization];
    if (previousOrg && previousOrg !== slug) await this.revokeAll(name, [previousOrg]);
    const rotated = secret !== undefined;
    void this.o.events.record(
      { apiVersion: "v1", kind: "Namespace", name, uid: ns.metadata.uid },
      "Normal",
      rotated ? "ApiKeyRotated" : "ApiKeyMinted",
      `API key of organization ${slug} ${rotated ? "rotated" : "minted"} into Secret ${API_KEY_SECRET}`,
    );
    ctx.log.info({ organization: slug, rotated }, "namespace API key minted");
    return {};
  }

  /** Revokes every active key named for `namespace` in each of the given organizations. */
  private async revokeAll(namespace: string, slugs: Array<string | undefined>): Promise<void> {
    for (const slug of new Set(slugs.filter((s): s is string => Boolean(s)))) {
      let keys: Awaited<ReturnType<AdminApiClient["listApiKeys"]>>;
      try {
        keys = await this.o.governance.listApiKeys(slug);
      } catch (err) {
        if (err instanceof AdminApiError && err.status === 404) continue; // organization gone: keys gone too
        throw err;
      }
      for (const k of keys) {
        if (k.name === apiKeyName(namespace) && !k.revoked_at)
          await this.o.governance.revokeApiKey(slug, k.key_id);
      }
    }
  }

  private async readSecret(namespace: string): Promise<V1Secret | undefined> {
    try {
      return await this.o.core.readNamespacedSecret({ name: API_KEY_SECRET, namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw new Error(`cannot read Secret ${namespace}/${API_KEY_SECRET}: ${describeKubeError(err)}`);
    }
  }

  private async writeSecret(
    namespace: string,
    existing: V1Secret | undefined,
    k: { slug: string; keyId: string; apiKey: string; rotation: string },
  ): Promise<void> {
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: API_KEY_SECRET,
        namespace,
        resourceVersion: existing?.metadata?.resourceVersion,
        labels: { [SecretMeta.managedByLabel]: SecretMeta.managedBy, [Labels.organization]: k.slug },
        annotations: {
          [SecretMeta.organization]: k.slug,
          [SecretMeta.keyId]: k.keyId,
          [SecretMeta.rotation]: k.rotation,
        },
      },
      type: "Opaque",
      data: { [API_KEY_SECRET_KEY]: Buffer.from(k.apiKey).toString("base64") },
    };
    try {
      if (existing) await this.o.core.replaceNamespacedSecret({ name: API_KEY_SECRET, namespace, body });
      else await this.o.core.createNamespacedSecret({ namespace, body });
    } catch (err) {
      throw new Error(`cannot write Secret ${namespace}/${API_KEY_SECRET}: ${describeKubeError(err)}`);
    }
  }

  private async deleteSecret(namespace: string): Promise<void> {
    try {
      await this.o.core.deleteNamespacedSecret({ name: API_KEY_SECRET, namespace });
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(`cannot delete Secret ${namespace}/${API_KEY_SECRET}: ${describeKubeError(err)}`);
    }
  }

  private async setFinalizers(ns: V1Namespace, finalizers: string[]): Promise<void> {
    try {
      await this.o.core.patchNamespace({
        name: ns.metadata!.name!,
        body: finalizersPatch(ns.metadata?.resourceVersion, finalizers),
      });
    } catch (err) {
      if (isNotFound(err)) return;
      const status = statusOf(err);
      throw new Error(
        `${status === 409 || status === 422 ? "stale namespace, retrying" : "cannot update namespace finalizers"}: ${describeKubeError(err)}`,
      );
    }
  }

  private warnOnce(ctx: Context, ns: V1Namespace, reason: string, message: string): void {
    const name = ns.metadata!.name!;
    if (this.warned.get(name) === message) return;
    this.warned.set(name, message);
    ctx.log.warn({ reason }, message);
    void this.o.events.record(
      { apiVersion: "v1", kind: "Namespace", name, uid: ns.metadata?.uid },
      "Warning",
      reason,
      message,
    );
  }
}
