/**
 * The upstreams' configuration schemas (TOLLGATE_UPSTREAMS, TOLLGATE_UPSTREAMS_FILE; validated
 * with the rest of the sidecar configuration in ../config.ts): `{name, type: http, url,
 * timeout_ms?, headers?, credentials?}` (JSON POST of the payload), `{name, type: mcp,
 * transport: streamable_http, url, timeout_ms?, credentials?}` and `{name, type: mcp, transport:
 * stdio, command, args?, env?, cwd?, timeout_ms?}`. `credentials` names a Kubernetes Secret
 * (never a value) mounted at `<credentials_dir>/<upstream name>/`; see `CredentialsSchema` and
 * docs/tool-credentials.md.
 */
import { z } from "zod";

/** An upstream's name (also the value of TOLLGATE_MCP_UPSTREAM). */
export const name = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "must be letters, digits, '_', '.', '-'");
/** An http(s) URL. */
export const httpUrl = z.url().refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL");
const timeoutMs = z.number().int().positive().max(3_600_000);

/** A Kubernetes Secret's name: a lower-case DNS subdomain (RFC 1123), at most 253 characters. */
const secretName = z
  .string()
  .min(1)
  .max(253)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    "must be a Kubernetes Secret name (lower-case letters, digits, '-', '.')",
  );
/** A key of a Secret's data (the file name it is mounted as). */
const secretKey = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/, "must be a Secret key (letters, digits, '-', '_', '.')")
  .refine((k) => !k.startsWith(".."), "must not start with '..'");

/**
 * `bearer`: the Secret's key `key` (default `token`) is sent as `Authorization: Bearer <value>`.
 */
export const BearerCredentialsSchema = z
  .object({
    type: z.literal("bearer"),
    secretName,
    key: secretKey.default("token"),
  })
  .strict();

/**
 * `headers`: every key of the Secret is a request header name, its value the header's value
 * (API-key style tools, e.g. `x-api-key`).
 */
export const HeadersCredentialsSchema = z
  .object({
    type: z.literal("headers"),
    secretName,
  })
  .strict();

/** The token endpoint settings of the OAuth credentials types (client id and secret in the Secret). */
const oauthFields = {
  secretName,
  tokenUrl: httpUrl.optional(),
  issuer: httpUrl.optional(),
  scope: z.string().trim().min(1).max(2000).optional(),
  audience: z.string().trim().min(1).max(2000).optional(),
  resource: z.url().optional(),
  /** How the client authenticates at the token endpoint (default client_secret_basic). */
  authMethod: z.enum(["client_secret_basic", "client_secret_post"]).default("client_secret_basic"),
};
const oneTokenEndpoint: [(c: { tokenUrl?: string; issuer?: string }) => boolean, z.core.$ZodCustomParams] = [
  (c) => (c.tokenUrl === undefined) !== (c.issuer === undefined),
  { message: "exactly one of tokenUrl and issuer is required", path: ["tokenUrl"] },
];

/**
 * `oauth2_client_credentials`: the Secret holds `client_id` and `client_secret`; the sidecar
 * gets an access token with the client credentials grant (RFC 6749 §4.4) from `tokenUrl`, or
 * from the token endpoint that `issuer`'s discovery document names (exactly one of the two),
 * and sends it as `Authorization: Bearer <token>`. `scope` (space-separated), `audience` (the
 * `audience` parameter of Auth0, Okta and others) and `resource` (RFC 8707) are sent when set.
 */
export const OAuth2ClientCredentialsSchema = z
  .object({ type: z.literal("oauth2_client_credentials"), ...oauthFields })
  .strict()
  .refine(...oneTokenEndpoint);

/**
 * `token_exchange`: OAuth 2.0 token exchange (RFC 8693). The sidecar authenticates at the token
 * endpoint as the client of the Secret (`client_id`, `client_secret`, as for
 * `oauth2_client_credentials`) and exchanges the pod's service account token
 * (TOLLGATE_SERVICE_TOKEN_FILE, `subject_token_type` urn:ietf:params:oauth:token-type:jwt) for an
 * access token for the tool (`audience`, `scope`, `resource` when set). Needs the service token
 * file (checked in SidecarConfigSchema).
 */
export const TokenExchangeCredentialsSchema = z
  .object({ type: z.literal("token_exchange"), ...oauthFields })
  .strict()
  .refine(...oneTokenEndpoint);

/**
 * An upstream's credentials: a reference to a Kubernetes Secret by name (never a value). The
 * admission webhook mounts the Secret read-only into the sidecar container only, at
 * `<credentialsDir>/<upstream name>/`, one file per key; the sidecar reads the files on use.
 */
export const CredentialsSchema = z.discriminatedUnion("type", [
  BearerCredentialsSchema,
  HeadersCredentialsSchema,
  OAuth2ClientCredentialsSchema,
  TokenExchangeCredentialsSchema,
]);
export type CredentialsConfig = z.output<typeof CredentialsSchema>;

/** An upstream that takes a JSON POST of the payload and answers with the tool's result. */
export const HttpUpstreamSchema = z
  .object({
    name,
    type: z.literal("http"),
    url: httpUrl,
    /** Per-call timeout in ms; default 30000. */
    timeout_ms: timeoutMs.default(30_000),
    /**
     * Static request headers, for non-secret values (they are plain text in the pod's
     * annotation and environment); credentials belong in a Secret named by `credentials`.
     * Values are never logged.
     */
    headers: z.record(z.string(), z.string()).default({}),
    /** The tool's credentials (a Secret reference); credential headers win over `headers`. */
    credentials: CredentialsSchema.optional(),
  })
  .strict()
  .refine(
    (u) =>
      u.credentials === undefined || u.credentials.type === "headers"
        ? true
        : !Object.keys(u.headers).some((h) => h.toLowerCase() === "authorization"),
    { message: "an Authorization header conflicts with credentials", path: ["headers"] },
  );

/** A tool on an MCP server over Streamable HTTP. */
export const McpHttpUpstreamSchema = z
  .object({
    name,
    type: z.literal("mcp"),
    transport: z.literal("streamable_http"),
    url: httpUrl,
    timeout_ms: timeoutMs.default(60_000),
    /** The server's credentials (a Secret reference), sent on every HTTP request to it. */
    credentials: CredentialsSchema.optional(),
  })
  .strict();

/** A tool on an MCP server started as a child process speaking stdio. */
export const McpStdioUpstreamSchema = z
  .object({
    name,
    type: z.literal("mcp"),
    transport: z.literal("stdio"),
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    timeout_ms: timeoutMs.default(60_000),
    /** Refused: a stdio server is a child process, there is no request to put a credential on. */
    credentials: z
      .never({
        error:
          "stdio upstreams take no credentials (only http and streamable_http upstreams do); give the server its own configuration",
      })
      .optional(),
  })
  .strict();

/** One configured upstream. */
export const UpstreamSchema = z.discriminatedUnion("type", [
  HttpUpstreamSchema,
  z.discriminatedUnion("transport", [McpHttpUpstreamSchema, McpStdioUpstreamSchema]),
]);
export type UpstreamConfig = z.infer<typeof UpstreamSchema>;
export type HttpUpstreamConfig = z.infer<typeof HttpUpstreamSchema>;
export type McpUpstreamConfig =
  | z.infer<typeof McpHttpUpstreamSchema>
  | z.infer<typeof McpStdioUpstreamSchema>;

/**
 * An upstream as `--print-config` and the logs show it: no secrets. Static headers and the env
 * of a stdio upstream show their names only; credentials show the Secret's name, the type and
 * the token endpoint settings (the values stay in the mounted files, which this never reads).
 */
export function describeUpstream(u: UpstreamConfig): Record<string, unknown> {
  return u.type === "http"
    ? {
        name: u.name,
        type: u.type,
        url: u.url,
        timeout_ms: u.timeout_ms,
        headers: Object.keys(u.headers),
        ...(u.credentials && { credentials: describeCredentials(u.credentials) }),
      }
    : u.transport === "stdio"
      ? {
          name: u.name,
          type: u.type,
          transport: u.transport,
          command: u.command,
          env: Object.keys(u.env),
        }
      : {
          name: u.name,
          type: u.type,
          transport: u.transport,
          url: u.url,
          ...(u.credentials && { credentials: describeCredentials(u.credentials) }),
        };
}

/** A credentials reference as shown: every field of it is a name or a URL, none a secret. */
const describeCredentials = (c: CredentialsConfig): Record<string, unknown> => ({ ...c });
