/**
 * The webhook's own PKI (@peculiar/x509 on Node's WebCrypto): a self-signed CA and a serving
 * certificate for the webhook Service's DNS names (plus extra SANs such as 127.0.0.1 in tests),
 * ECDSA P-256 keys. Pure apart from key generation; operator/webhook/tls.ts stores the result in
 * a Secret and publishes the CA as the caBundle.
 */
import "./reflect-metadata.js";
import { webcrypto } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

/** PEM-encoded CA and serving certificate with keys (keys are secrets). */
export interface WebhookPki {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

/** DNS names of a webhook Service: name, name.namespace, name.namespace.svc(.cluster.local). */
export const serviceDnsNames = (service: string, namespace: string): string[] => [
  service,
  `${service}.${namespace}`,
  `${service}.${namespace}.svc`,
  `${service}.${namespace}.svc.cluster.local`,
];

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", key as webcrypto.CryptoKey));
  const b64 = der
    .toString("base64")
    .match(/.{1,64}/g)!
    .join("\n");
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----\n`;
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
  return webcrypto.subtle.importKey("pkcs8", der, ALG, true, ["sign"]) as Promise<CryptoKey>;
}

const generateKeys = () =>
  webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as Promise<CryptoKeyPair>;

/** A self-signed CA valid for `days` (default 3650). */
export async function createCa(
  commonName: string,
  now = new Date(),
  days = 3650,
): Promise<{ cert: string; key: string }> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: ALG,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + days * 86_400_000),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString("pem"), key: await pkcs8Pem(keys.privateKey) };
}

/** A serving certificate for `hosts` (DNS names or IP addresses) signed by `ca`, valid for `days` (default 365). */
export async function createServingCert(
  ca: { cert: string; key: string },
  hosts: string[],
  now = new Date(),
  days = 365,
): Promise<{ cert: string; key: string }> {
  const keys = await generateKeys();
  const caCert = new x509.X509Certificate(ca.cert);
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${hosts[0] ?? "tollgate-webhook"}`,
    issuer: caCert.subject,
    publicKey: keys.publicKey,
    signingKey: await importKey(ca.key),
    signingAlgorithm: ALG,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + days * 86_400_000),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        hosts.map((h) => ({ type: isIP(h) ? ("ip" as const) : ("dns" as const), value: h })),
      ),
      await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return { cert: cert.toString("pem"), key: await pkcs8Pem(keys.privateKey) };
}

/** A fresh CA and serving certificate for `hosts`. */
export async function createWebhookPki(hosts: string[], now = new Date()): Promise<WebhookPki> {
  const ca = await createCa("tollgate-webhook-ca", now);
  const serving = await createServingCert(ca, hosts, now);
  return { caCert: ca.cert, caKey: ca.key, cert: serving.cert, key: serving.key };
}

/**
 * Whether stored PKI can be reused: the serving certificate is signed by the CA, covers every
 * host, and stays valid for at least `minRemainingDays` (default 30) past `now`.
 */
export async function pkiUsable(
  pki: WebhookPki,
  hosts: string[],
  now = new Date(),
  minRemainingDays = 30,
): Promise<boolean> {
  try {
    const ca = new x509.X509Certificate(pki.caCert);
    const cert = new x509.X509Certificate(pki.cert);
    const horizon = now.getTime() + minRemainingDays * 86_400_000;
    if (cert.notAfter.getTime() < horizon || ca.notAfter.getTime() < horizon) return false;
    if (!(await cert.verify({ publicKey: ca.publicKey, signatureOnly: true }))) return false;
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const names = new Set((san?.names.toJSON() ?? []).map((n) => n.value));
    return hosts.every((h) => names.has(h));
  } catch {
    return false;
  }
}
