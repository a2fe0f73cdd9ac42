/** Builds the configured upstreams by name. */

import type { Logger } from "../logger.js";
import type { CredentialSource } from "./credential-source.js";
import { createCredentialSource } from "./credentials.js";
import { HttpUpstream } from "./http.js";
import type { UpstreamConfig } from "./schema.js";
import type { Upstream } from "./types.js";

export { HttpUpstream } from "./http.js";
export * from "./types.js";

/**
 * One Upstream per configuration entry, keyed by name (names are unique, see config.ts), each
 * with the credential source of its `credentials` (files under
 * `<credentialsDir>/<upstream name>/`, see credentials.ts). The MCP SDK loads only when an mcp
 * upstream is configured: it is ~8 MiB of a sidecar's memory.
 */
export async function createUpstreams(
  configs: readonly UpstreamConfig[],
  log: Logger,
  opts: { credentialsDir: string; serviceTokenFile?: string | null },
): Promise<Map<string, Upstream>> {
  const mcp = configs.some((c) => c.type === "mcp") ? await import("./mcp.js") : null;
  const credentialsOf = (c: UpstreamConfig): CredentialSource | null =>
    c.credentials
      ? createCredentialSource({
          upstream: c.name,
          credentials: c.credentials,
          credentialsDir: opts.credentialsDir,
          timeoutMs: c.timeout_ms,
          serviceTokenFile: opts.serviceTokenFile ?? null,
          log,
        })
      : null;
  return new Map(
    configs.map((c): [string, Upstream] => [
      c.name,
      c.type === "http"
        ? new HttpUpstream(c, credentialsOf(c))
        : new mcp!.McpUpstream(c, log, credentialsOf(c)),
    ]),
  );
}
