/**
 * Tool credentials that live only in the sidecar: an upstream's `credentials` names a
 * Kubernetes Secret, the admission webhook mounts it read-only into the sidecar container at
 * `<credentialsDir>/<upstream name>/` (one file per key), and this module turns the files into
 * request headers for each forwarded call: `bearer` and `headers` here, the OAuth grants in
 * oauth.ts, the Secret folder they all read and the source contract in credential-source.ts.
 *
 * Re-reading: the kubelet updates a Secret volume atomically — it writes the new files into a
 * fresh `..<timestamp>` folder and swaps the `..data` symlink to it. Every use reads the
 * `..data` link (one readlink, ~4 µs) and re-reads the files only when its target changed; the
 * files are then read through that target, so one use never mixes keys of two versions. So a
 * rotation takes effect on the first call after the kubelet swapped the link (the kubelet
 * itself takes up to its sync period plus cache TTL, about a minute by default, to do that).
 * A folder without `..data` (a plain directory: local runs, docker bind mounts) is checked on
 * every use by the files' inode, size and mtime instead (hidden files are ignored). A changed
 * Secret drops a cached OAuth token.
 *
 * Failure is closed: when a credential cannot be had (file missing or empty, a value that is
 * not a valid header, token endpoint down or refusing) `headers()` throws an UpstreamError
 * (`unavailable`, errorClass `CredentialUnavailable`) naming the upstream, the Secret and the
 * cause, and the call is not forwarded. No message, log line or metric carries a value.
 */
import path from "node:path";
import {
  type CredentialSource,
  type CredentialSourceOptions,
  HEADER_NAME,
  HEADER_VALUE,
  SecretDir,
} from "./credential-source.js";
import { ClientCredentialsSource, TokenExchangeSource } from "./oauth.js";

/** Headers a `headers` Secret may not set: the sidecar and the transport own them. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  "traceparent",
  "tracestate",
]);

/** Builds the credential source of one upstream (no I/O until the first `headers()`). */
export function createCredentialSource(opts: CredentialSourceOptions): CredentialSource {
  const c = opts.credentials;
  const dir = new SecretDir(opts.upstream, c.secretName, path.join(opts.credentialsDir, opts.upstream));
  if (c.type === "bearer") return new BearerSource(dir, c.key);
  if (c.type === "headers") return new HeadersSource(dir);
  if (c.type === "oauth2_client_credentials") return new ClientCredentialsSource(opts, c, dir);
  // Config validation refuses token_exchange without a service token file (config.ts).
  if (opts.serviceTokenFile == null) throw new Error("token_exchange needs TOLLGATE_SERVICE_TOKEN_FILE");
  return new TokenExchangeSource(opts, c, dir, opts.serviceTokenFile);
}

/** `Authorization: Bearer <the key's value>`. */
class BearerSource implements CredentialSource {
  readonly type = "bearer" as const;
  constructor(
    readonly dir: SecretDir,
    readonly key: string,
  ) {}

  #cached: { version: string; headers: Record<string, string> } | null = null;

  async headers(): Promise<Record<string, string>> {
    const { version, values } = await this.dir.read([this.key]);
    if (this.#cached?.version === version) return this.#cached.headers;
    const token = values.get(this.key)!;
    if (!HEADER_VALUE.test(token) || /\s/.test(token))
      throw this.dir.fail(`key ${this.key} is not a valid bearer token (whitespace or control characters)`);
    this.#cached = { version, headers: { authorization: `Bearer ${token}` } };
    return this.#cached.headers;
  }

  rejected(): void {}
}

/** Every key of the Secret as a header. */
class HeadersSource implements CredentialSource {
  readonly type = "headers" as const;
  #cached: { version: string; headers: Record<string, string> } | null = null;
  constructor(readonly dir: SecretDir) {}

  async headers(): Promise<Record<string, string>> {
    const { version, values } = await this.dir.read(null);
    if (this.#cached?.version === version) return this.#cached.headers;
    if (values.size === 0) throw this.dir.fail("the Secret has no keys");
    const headers: Record<string, string> = {};
    for (const [key, value] of values) {
      const name = key.toLowerCase();
      if (!HEADER_NAME.test(key)) throw this.dir.fail(`key ${key} is not an HTTP header name`);
      if (RESERVED_HEADERS.has(name) || name.startsWith("x-tollgate-"))
        throw this.dir.fail(`key ${key} names a header the sidecar sets itself`);
      if (!HEADER_VALUE.test(value))
        throw this.dir.fail(`key ${key} holds characters not allowed in a header value`);
      headers[name] = value;
    }
    this.#cached = { version, headers };
    return headers;
  }

  rejected(): void {}
}
