/**
 * Credentials from an OAuth 2.0 token endpoint (openid-client): the client credentials grant and
 * token exchange (RFC 8693), one cached token per upstream, refreshed before it expires.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type * as OpenIdClient from "openid-client";
import type { Logger } from "../logger.js";
import {
  type CredentialSource,
  type CredentialSourceOptions,
  HEADER_VALUE,
  type SecretDir,
} from "./credential-source.js";
import type { CredentialsConfig } from "./schema.js";
import { UpstreamError } from "./types.js";

/**
 * Longest wait for the token endpoint (and discovery), in seconds; the upstream's own
 * timeout_ms caps it further.
 */
export const TOKEN_REQUEST_TIMEOUT_SECONDS = 10;

/** Lifetime assumed for an access token whose response has no `expires_in`, in seconds. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 60;

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
export class ClientCredentialsSource extends OAuthSource {
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
export class TokenExchangeSource extends OAuthSource {
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
