/**
 * Tool credentials that live only in the sidecar: an upstream's `credentials` names a
 * Kubernetes Secret, the admission webhook mounts it read-only into the sidecar container at
 * `<credentialsDir>/<upstream name>/` (one file per key), and this module turns the files into
 * request headers for each forwarded call.
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
import { createHash } from "node:crypto";
import { readlinkSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import type * as OpenIdClient from "openid-client";
import type { Logger } from "../logger.js";
import type { CredentialsConfig } from "./schema.js";
import { UpstreamError } from "./types.js";

/** The errorClass of every credential failure (the outcome's error_class). */
export const CREDENTIAL_UNAVAILABLE = "CredentialUnavailable";

/**
 * Longest wait for the token endpoint (and discovery), in seconds; the upstream's own
 * timeout_ms caps it further.
 */
export const TOKEN_REQUEST_TIMEOUT_SECONDS = 10;

/** Lifetime assumed for an access token whose response has no `expires_in`, in seconds. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 60;

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

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value without control characters (no CR/LF injection); latin-1 only. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Where the credentials of one upstream come from; one per upstream, shared by its calls. */
export interface CredentialSource {
  /** `bearer`, `headers`, `oauth2_client_credentials` or `token_exchange`. */
  readonly type: CredentialsConfig["type"];
  /**
   * The request headers carrying the credential (lower-case names), for one request.
   * `signal` stops waiting (a shared token request goes on for the others).
   * @throws UpstreamError `unavailable`/CredentialUnavailable when there is no credential;
   *   `aborted` when `signal` fired first.
   */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /**
   * The tool refused `used` (HTTP 401): a cached access token that is still the one sent is
   * dropped, so the next call fetches a new one. No-op for file credentials (the files are
   * re-read on every use anyway).
   */
  rejected(used: Record<string, string>): void;
}

/** Options of createCredentialSource. */
export interface CredentialSourceOptions {
  /** The upstream's name (the folder under credentialsDir; named in errors). */
  upstream: string;
  credentials: CredentialsConfig;
  /** TOLLGATE_CREDENTIALS_DIR. */
  credentialsDir: string;
  /** The upstream's per-call timeout in ms (caps the token request). */
  timeoutMs: number;
  /** TOLLGATE_SERVICE_TOKEN_FILE: the subject token of `token_exchange`. */
  serviceTokenFile?: string | null;
  log: Logger;
}

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

/** A credential failure: names the upstream, the Secret and the cause, never a value. */
const unavailable = (upstream: string, secretName: string, cause: string) =>
  new UpstreamError(
    upstream,
    "unavailable",
    CREDENTIAL_UNAVAILABLE,
    `upstream ${upstream}: credential unavailable (Secret ${secretName}): ${cause}`,
  );

/** One snapshot of a mounted Secret: its version and the files read (key → trimmed value). */
interface Snapshot {
  version: string;
  values: ReadonlyMap<string, string>;
}

/**
 * A mounted Secret folder, re-read when the kubelet swapped its `..data` link (or, without
 * one, when a file's inode, size or mtime changed). See the module comment.
 */
class SecretDir {
  #snapshot: Snapshot | null = null;

  constructor(
    readonly upstream: string,
    readonly secretName: string,
    readonly dir: string,
  ) {}

  /** An UpstreamError for this Secret. */
  fail(cause: string): UpstreamError {
    return unavailable(this.upstream, this.secretName, cause);
  }

  /**
   * The current values of `keys` (null: every key in the folder), re-read when the Secret
   * changed.
   * @throws UpstreamError when a key is missing, unreadable or empty.
   */
  async read(keys: readonly string[] | null): Promise<Snapshot> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#read(keys);
      } catch (err) {
        // The kubelet removed the folder ..data pointed to between readlink and read: again.
        if (err instanceof Swapped && attempt < 2) continue;
        if (err instanceof Swapped) throw this.fail(`cannot read key ${err.key} (the Secret kept changing)`);
        if (err instanceof UpstreamError) throw err;
        throw this.fail(`cannot read ${this.dir} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
      }
    }
  }

  async #read(keys: readonly string[] | null): Promise<Snapshot> {
    const data = this.#dataLink();
    if (data !== null && this.#snapshot?.version === `..data:${data}`) return this.#snapshot;
    const base = data === null ? this.dir : path.resolve(this.dir, data);
    let names: string[];
    try {
      names = keys ? [...keys] : (await readdir(base)).filter((n) => !n.startsWith(".")).sort();
    } catch (err) {
      if (data !== null && (err as NodeJS.ErrnoException).code === "ENOENT") throw new Swapped("*");
      throw err;
    }
    const version =
      data !== null
        ? `..data:${data}`
        : (await Promise.all(names.map((n) => this.#fingerprint(base, n)))).join("|");
    if (this.#snapshot?.version === version) return this.#snapshot;
    const values = new Map<string, string>();
    for (const n of names) {
      let text: string;
      try {
        text = await readFile(path.join(base, n), "utf8");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? "error";
        if (code === "ENOENT" && data !== null && this.#dataLink() !== data) throw new Swapped(n);
        throw this.fail(`cannot read key ${n} at ${path.join(this.dir, n)} (${code})`);
      }
      const value = text.trim();
      if (value === "") throw this.fail(`key ${n} is empty`);
      values.set(n, value);
    }
    this.#snapshot = { version, values };
    return this.#snapshot;
  }

  /**
   * The target of `..data`, or null for a plain folder. Synchronous on purpose: it runs on
   * every call, a Secret volume is a tmpfs (the syscall never waits for a disk), and readlinkSync
   * costs ~4 µs where fs.promises.readlink costs ~45 µs (a thread-pool round trip; measured on
   * Node 20, x86-64).
   */
  #dataLink(): string | null {
    try {
      return readlinkSync(path.join(this.dir, "..data"));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EINVAL" || code === "ENOTDIR") return null; // a plain folder
      throw err;
    }
  }

  async #fingerprint(base: string, name: string): Promise<string> {
    try {
      const s = await stat(path.join(base, name));
      return `${name}:${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      throw this.fail(`cannot read key ${name} at ${path.join(this.dir, name)} (${code})`);
    }
  }
}

/** The Secret was swapped while being read (the old folder is gone): read it again. */
class Swapped extends Error {
  constructor(readonly key: string) {
    super("the Secret changed while being read");
  }
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

/** A cached access token; times are performance.now() milliseconds. */
interface CachedToken {
  value: string;
  /** From here on a call starts a refresh in the background and still uses this token. */
  refreshAt: number;
  /** From here on the token is not sent; a call waits for a new one. */
  expiresAt: number;
  /** The version of the inputs it was obtained with (the Secret; the subject token). */
  inputsVersion: string;
}

type OAuthConfig = Extract<CredentialsConfig, { type: "oauth2_client_credentials" | "token_exchange" }>;

/** What a token request is made with: the client (from the Secret) and, for an exchange, the subject token. */
interface GrantInputs {
  /** Changes when any input changes; a cached token obtained with other inputs is not used. */
  version: string;
  /** The Secret's client_id and client_secret. */
  secretVersion: string;
  values: ReadonlyMap<string, string>;
  /** The token exchanged (token_exchange only; a secret). */
  subjectToken?: string;
}

/**
 * An access token from an OAuth 2.0 token endpoint through openid-client, the client
 * authenticated with the Secret's `client_id` and `client_secret`: one token cached per
 * upstream, refreshed before it expires, one token request at a time (single flight). The
 * grant itself is the subclass's: client credentials or token exchange.
 *
 * Timing, for `ttl` = the response's expires_in, counted from the moment the token was
 * requested (see tokenTimes): calls use the cached token until its refresh time; from then the
 * first call starts a refresh in the background and calls keep using the current token until
 * its expiry time, after which they wait for the new one. A failed background refresh is
 * logged and retried by the next call. The inputs (the Secret, the subject token) are checked
 * on every use: when they changed the cached token is dropped.
 */
abstract class OAuthSource implements CredentialSource {
  abstract readonly type: OAuthConfig["type"];
  protected readonly opts: CredentialSourceOptions;
  protected readonly config: OAuthConfig;
  protected readonly dir: SecretDir;
  readonly #log: Logger;
  #token: CachedToken | null = null;
  #inflight: Promise<CachedToken> | null = null;
  /** openid-client's Configuration for one Secret version (client id and secret). */
  #client: { secretVersion: string; config: OpenIdClient.Configuration } | null = null;
  /** The authorization server's metadata (from discovery, or the configured tokenUrl). */
  #server: OpenIdClient.ServerMetadata | null = null;

  constructor(opts: CredentialSourceOptions, config: OAuthConfig, dir: SecretDir) {
    this.opts = opts;
    this.config = config;
    this.dir = dir;
    this.#log = opts.log.child({ upstream: opts.upstream });
  }

  /** The grant's request to the token endpoint (openid-client's errors propagate). */
  protected abstract grant(
    client: typeof OpenIdClient,
    config: OpenIdClient.Configuration,
    params: Record<string, string>,
    inputs: GrantInputs,
  ): Promise<OpenIdClient.TokenEndpointResponse>;

  /** The current inputs of a token request; re-read on every use. */
  protected async inputs(): Promise<GrantInputs> {
    const { version, values } = await this.dir.read(["client_id", "client_secret"]);
    return { version, secretVersion: version, values };
  }

  async headers(signal?: AbortSignal): Promise<Record<string, string>> {
    const token = await this.#current(signal);
    return { authorization: `Bearer ${token.value}` };
  }

  rejected(used: Record<string, string>): void {
    const t = this.#token;
    if (t && used.authorization === `Bearer ${t.value}`) {
      this.#token = null;
      this.#log.warn("the tool refused the access token (401); the next call gets a new one");
    }
  }

  async #current(signal?: AbortSignal): Promise<CachedToken> {
    // Checked on every use: a rotated client secret or subject token drops the cached token.
    const { version } = await this.inputs();
    const now = performance.now();
    const t = this.#token;
    if (t && t.inputsVersion === version) {
      if (now < t.refreshAt) return t;
      if (now < t.expiresAt) {
        if (!this.#inflight)
          this.#fetch().catch((err: UpstreamError) =>
            this.#log.warn({ cause: err.message }, "access token refresh failed; using the current token"),
          );
        return t;
      }
    }
    return abortable(this.#fetch(), signal, this.opts.upstream);
  }

  /** One token request at a time: concurrent callers share it. */
  #fetch(): Promise<CachedToken> {
    this.#inflight ??= this.#request().finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  async #request(): Promise<CachedToken> {
    const client = await import("openid-client");
    const inputs = await this.inputs();
    const config = await this.#configuration(client, inputs.secretVersion, inputs.values);
    const params: Record<string, string> = {};
    if (this.config.scope) params.scope = this.config.scope;
    if (this.config.audience) params.audience = this.config.audience;
    if (this.config.resource) params.resource = this.config.resource;
    const started = performance.now();
    let response: OpenIdClient.TokenEndpointResponse;
    try {
      response = await this.grant(client, config, params, inputs);
    } catch (err) {
      throw this.dir.fail(`token request to ${this.#tokenEndpoint()} failed: ${describeOAuthError(err)}`);
    }
    if (response.token_type.toLowerCase() !== "bearer")
      throw this.dir.fail(
        `the token endpoint issued a ${response.token_type} token; only Bearer is supported`,
      );
    if (!HEADER_VALUE.test(response.access_token) || /\s/.test(response.access_token))
      throw this.dir.fail("the token endpoint issued an access token that is not a valid header value");
    const token: CachedToken = {
      value: response.access_token,
      ...tokenTimes(started, response.expires_in ?? DEFAULT_TOKEN_LIFETIME_SECONDS),
      inputsVersion: inputs.version,
    };
    // Tagged with its inputs' version: after a rotation #current does not use it.
    this.#token = token;
    this.#log.debug({ grant: this.type, expires_in: response.expires_in ?? null }, "access token obtained");
    return token;
  }

  /** openid-client's Configuration for the current client id and secret (discovery once). */
  async #configuration(
    client: typeof OpenIdClient,
    version: string,
    values: ReadonlyMap<string, string>,
  ): Promise<OpenIdClient.Configuration> {
    if (this.#client?.secretVersion === version) return this.#client.config;
    const clientId = values.get("client_id")!;
    const secret = values.get("client_secret")!;
    const auth =
      this.config.authMethod === "client_secret_post"
        ? client.ClientSecretPost(secret)
        : client.ClientSecretBasic(secret);
    const timeout = Math.min(TOKEN_REQUEST_TIMEOUT_SECONDS, this.opts.timeoutMs / 1000);
    const insecure = (this.config.tokenUrl ?? this.config.issuer)!.startsWith("http:");
    let config: OpenIdClient.Configuration;
    if (this.#server) {
      config = new client.Configuration(this.#server, clientId, undefined, auth);
    } else if (this.config.issuer) {
      try {
        config = await client.discovery(new URL(this.config.issuer), clientId, undefined, auth, {
          timeout,
          ...(insecure && { execute: [client.allowInsecureRequests] }),
        });
      } catch (err) {
        throw this.dir.fail(`discovery at ${this.config.issuer} failed: ${describeOAuthError(err)}`);
      }
      this.#server = config.serverMetadata();
    } else {
      const tokenUrl = new URL(this.config.tokenUrl!);
      this.#server = { issuer: tokenUrl.origin, token_endpoint: tokenUrl.href };
      config = new client.Configuration(this.#server, clientId, undefined, auth);
    }
    config.timeout = timeout;
    if (insecure) client.allowInsecureRequests(config);
    this.#client = { secretVersion: version, config };
    return config;
  }

  #tokenEndpoint(): string {
    return this.#server?.token_endpoint ?? this.config.tokenUrl ?? this.config.issuer ?? "?";
  }
}

/** The client credentials grant (RFC 6749 §4.4): the client's own access token. */
class ClientCredentialsSource extends OAuthSource {
  readonly type = "oauth2_client_credentials" as const;

  protected grant(
    client: typeof OpenIdClient,
    config: OpenIdClient.Configuration,
    params: Record<string, string>,
  ): Promise<OpenIdClient.TokenEndpointResponse> {
    return client.clientCredentialsGrant(config, params);
  }
}

/** RFC 8693's grant type, subject token type and requested token type. */
export const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** A JWT's shape: three base64url parts. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Token exchange (RFC 8693): the pod's service account token (TOLLGATE_SERVICE_TOKEN_FILE) is
 * the subject token, exchanged for an access token for the tool. The file is read on every use
 * (the kubelet rotates it): a changed subject token drops the cached access token, and every
 * exchange sends the token the file holds at that moment.
 */
class TokenExchangeSource extends OAuthSource {
  readonly type = "token_exchange" as const;
  readonly #tokenFile: string;

  constructor(opts: CredentialSourceOptions, config: OAuthConfig, dir: SecretDir, tokenFile: string) {
    super(opts, config, dir);
    this.#tokenFile = tokenFile;
  }

  protected override async inputs(): Promise<GrantInputs> {
    const secret = await super.inputs();
    const subjectToken = await this.#subjectToken();
    const digest = createHash("sha256").update(subjectToken).digest("base64url");
    return { ...secret, version: `${secret.version}|${digest}`, subjectToken };
  }

  async #subjectToken(): Promise<string> {
    let text: string;
    try {
      text = await readFile(this.#tokenFile, "utf8");
    } catch (err) {
      throw this.dir.fail(
        `cannot read the service account token (TOLLGATE_SERVICE_TOKEN_FILE ${this.#tokenFile}: ${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
    const token = text.trim();
    if (!JWT.test(token))
      throw this.dir.fail(
        `the service account token (TOLLGATE_SERVICE_TOKEN_FILE ${this.#tokenFile}) is not a JWT`,
      );
    return token;
  }

  protected grant(
    client: typeof OpenIdClient,
    config: OpenIdClient.Configuration,
    params: Record<string, string>,
    inputs: GrantInputs,
  ): Promise<OpenIdClient.TokenEndpointResponse> {
    return client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, {
      ...params,
      subject_token: inputs.subjectToken!,
      subject_token_type: JWT_TOKEN_TYPE,
      requested_token_type: ACCESS_TOKEN_TYPE,
    });
  }
}

/**
 * When a token requested at `requestedAt` (performance.now() ms) with `expiresIn` seconds is
 * refreshed and when it is no longer sent. Expiry keeps a skew of max(1 s, min(5 s, 10 %)) —
 * at least 1 s because expires_in and a JWT's exp are whole seconds, so a token can lapse up
 * to 1 s before expires_in says — but never more than half the lifetime. The refresh starts
 * min(30 s, 20 %) before the end (80 % of a short lifetime, 30 s before a long one), and no
 * later than the expiry time.
 */
export function tokenTimes(requestedAt: number, expiresIn: number): { refreshAt: number; expiresAt: number } {
  const ttl = Math.max(0, expiresIn) * 1000;
  const skew = Math.min(ttl / 2, Math.max(1000, Math.min(5000, ttl * 0.1)));
  const margin = Math.max(skew, Math.min(30_000, ttl * 0.2));
  return { refreshAt: requestedAt + ttl - margin, expiresAt: requestedAt + ttl - skew };
}

/**
 * A token endpoint failure as short text without secrets: the OAuth error code (a fixed
 * ASCII word, RFC 6749 §5.2) and HTTP status, or the network error's code. The provider's
 * free-text error_description is left out (it may quote request input).
 */
function describeOAuthError(err: unknown): string {
  const e = err as {
    name?: string;
    code?: string;
    error?: unknown;
    status?: unknown;
    cause?: { code?: unknown; name?: string } | { parameters?: { error?: unknown } }[];
  };
  // ResponseBodyError carries the JSON body's error; WWWAuthenticateChallengeError (a 401 with
  // a WWW-Authenticate header, e.g. a wrong client secret) the challenge's error parameter.
  const code = Array.isArray(e?.cause)
    ? e.cause.find((c) => c.parameters?.error)?.parameters?.error
    : e?.error;
  if (typeof code === "string" && /^[\x20-\x7e]{1,64}$/.test(code))
    return `refused: ${code}${typeof e.status === "number" ? ` (HTTP ${e.status})` : ""}`;
  if (Array.isArray(e?.cause)) return typeof e.status === "number" ? `refused (HTTP ${e.status})` : "refused";
  if (e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError") return "no answer in time";
  if (typeof e?.cause?.code === "string") return e.cause.code;
  if (typeof e?.status === "number") return `HTTP ${e.status}`;
  if (typeof e?.code === "string") return e.code;
  return e?.name ?? "error";
}

/** Waits for `p` unless `signal` fires first (then an `aborted` UpstreamError). */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, upstream: string): Promise<T> {
  if (!signal) return p;
  const abortError = () =>
    new UpstreamError(upstream, "aborted", "Aborted", `upstream ${upstream}: call aborted`);
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
