/**
 * Origin validation of the MCP face (MCP transport spec, Streamable HTTP, "Security Warning":
 * servers MUST validate the Origin header to prevent DNS rebinding). A request without an
 * Origin (every non-browser client) passes; a browser request passes only from an allowed
 * Origin. An allowlist entry `scheme://host` allows every port of that host,
 * `scheme://host:port` exactly that one. Pure.
 */

/**
 * True when `origin` (the request's Origin header, or undefined when absent) may use /mcp.
 * @param allowed lowercase entries, e.g. ["http://localhost", "https://agent.example:8443"].
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (opaque origins) and garbage
  }
  const scheme = url.protocol.toLowerCase();
  const host = url.hostname.toLowerCase();
  const port = url.port; // "" for the scheme's default port
  return allowed.some((entry) => {
    let e: URL;
    try {
      e = new URL(entry);
    } catch {
      return false;
    }
    if (e.protocol !== scheme || e.hostname.toLowerCase() !== host) return false;
    const explicitPort = /:\d+$/.test(entry.replace(/\/$/, ""));
    return !explicitPort || e.port === port;
  });
}
