/** Builds the configured upstreams by name. */
import type { UpstreamConfig } from "../config.js";
import type { Logger } from "../logger.js";
import { HttpUpstream } from "./http.js";
import { McpUpstream } from "./mcp.js";
import type { Upstream } from "./types.js";

export { HttpUpstream } from "./http.js";
export { McpUpstream } from "./mcp.js";
export * from "./types.js";

/** One Upstream per configuration entry, keyed by name (names are unique, see config.ts). */
export function createUpstreams(configs: readonly UpstreamConfig[], log: Logger): Map<string, Upstream> {
  return new Map(
    configs.map((c): [string, Upstream] => [
      c.name,
      c.type === "http" ? new HttpUpstream(c) : new McpUpstream(c, log),
    ]),
  );
}
