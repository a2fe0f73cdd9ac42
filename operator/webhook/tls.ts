/**
 * Serving certificates of the webhook. Self-signed mode: every replica shares one CA and
 * serving certificate stored in a Secret (created by the first replica, regenerated when it
 * nears expiry or lacks a host), and keeps the CA in the caBundle of every webhook of the
 * MutatingWebhookConfiguration (sidecar injector) and the ValidatingWebhookConfiguration
 * (policy validator). cert-manager mode: the certificate is read from files that
 * cert-manager maintains and its CA injector sets the caBundle; the operator touches neither.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import jsonpatch from "fast-json-patch";
import type { Logger } from "pino";
import {
  describeKubeError,
  type GroupObjects,
  isConflict,
  isNotFound,
  type JsonPatch,
} from "../kube/clients.js";
import { createWebhookPki, pkiUsable, type WebhookPki } from "./certs.js";

/** The serving certificate and key in PEM (secrets), plus the CA when self-managed. */
export interface ServingCert {
  cert: string;
  key: string;
  caCert?: string;
}

const Keys = { caCert: "ca.crt", caKey: "ca.key", cert: "tls.crt", key: "tls.key" } as const;

const fromSecret = (s: V1Secret): WebhookPki | undefined => {
  const d = s.data ?? {};
  const get = (k: string) => (d[k] ? Buffer.from(d[k], "base64").toString("utf8") : undefined);
  const caCert = get(Keys.caCert);
  const caKey = get(Keys.caKey);
  const cert = get(Keys.cert);
  const key = get(Keys.key);
  return caCert && caKey && cert && key ? { caCert, caKey, cert, key } : undefined;
};

const secretBody = (
  name: string,
  namespace: string,
  pki: WebhookPki,
  resourceVersion?: string,
): V1Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: {
    name,
    namespace,
    resourceVersion,
    labels: {
      "app.kubernetes.io/managed-by": "tollgate-operator",
      "app.kubernetes.io/component": "webhook-tls",
    },
  },
  type: "kubernetes.io/tls",
  data: {
    [Keys.caCert]: Buffer.from(pki.caCert).toString("base64"),
    [Keys.caKey]: Buffer.from(pki.caKey).toString("base64"),
    [Keys.cert]: Buffer.from(pki.cert).toString("base64"),
    [Keys.key]: Buffer.from(pki.key).toString("base64"),
  },
});

/**
 * Returns usable PKI from Secret `name` in `namespace`, creating or regenerating it when needed.
 * Concurrent replicas converge on whichever Secret was written first (409 → read again).
 */
export async function ensureWebhookPki(
  core: CoreV1Api,
  namespace: string,
  name: string,
  hosts: string[],
  log: Logger,
): Promise<WebhookPki> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let existing: V1Secret | undefined;
    try {
      existing = await core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(`cannot read Secret ${namespace}/${name}: ${describeKubeError(err)}`);
    }
    const stored = existing && fromSecret(existing);
    if (stored && (await pkiUsable(stored, hosts))) return stored;
    const pki = await createWebhookPki(hosts);
    try {
      if (existing) {
        await core.replaceNamespacedSecret({
          name,
          namespace,
          body: secretBody(name, namespace, pki, existing.metadata?.resourceVersion),
        });
      } else {
        await core.createNamespacedSecret({ namespace, body: secretBody(name, namespace, pki) });
      }
      log.info({ secret: `${namespace}/${name}`, hosts }, "webhook certificate issued");
      return pki;
    } catch (err) {
      if (!isConflict(err))
        throw new Error(`cannot write Secret ${namespace}/${name}: ${describeKubeError(err)}`);
    }
  }
  throw new Error(`Secret ${namespace}/${name} keeps changing; giving up`);
}

/** Reads tls.crt and tls.key from a directory (cert-manager mode). */
export async function readCertDir(dir: string): Promise<ServingCert> {
  const [cert, key] = await Promise.all([
    readFile(path.join(dir, "tls.crt"), "utf8"),
    readFile(path.join(dir, "tls.key"), "utf8"),
  ]);
  return { cert, key };
}

/** A Mutating- or ValidatingWebhookConfiguration as plain JSON (only what the operator reads). */
export interface WebhookConfigurationObject {
  metadata?: { name?: string; resourceVersion?: string };
  webhooks?: Array<{ name: string; clientConfig?: { caBundle?: string } }>;
}

/**
 * Sets `caPem` as the caBundle of every webhook of the configuration `name`. Returns false when
 * the configuration does not exist (yet); true when it holds the bundle afterwards. The JSON
 * Patch is the diff (fast-json-patch `compare`) of the configuration and a copy with the bundle
 * set, guarded by a `test` of the resourceVersion so its webhook indices cannot land on a list
 * changed meanwhile (the API server then answers 409/422 and the next publish retries).
 */
export async function publishCaBundle(
  configs: GroupObjects<WebhookConfigurationObject>,
  name: string,
  caPem: string,
  log: Logger,
): Promise<boolean> {
  let config: WebhookConfigurationObject;
  try {
    config = await configs.get(name);
  } catch (err) {
    if (isNotFound(err)) return false;
    throw new Error(`cannot read webhook configuration ${name}: ${describeKubeError(err)}`);
  }
  const bundle = Buffer.from(caPem).toString("base64");
  const published = structuredClone(config);
  for (const w of published.webhooks ?? []) w.clientConfig = { ...w.clientConfig, caBundle: bundle };
  const changes = jsonpatch.compare(config, published) as JsonPatch;
  if (changes.length === 0) return true;
  const resourceVersion = config.metadata?.resourceVersion;
  const guard: JsonPatch = resourceVersion
    ? [{ op: "test", path: "/metadata/resourceVersion", value: resourceVersion }]
    : [];
  await configs.patch(name, [...guard, ...changes]);
  log.info({ configuration: name, webhooks: changes.length }, "caBundle published");
  return true;
}
