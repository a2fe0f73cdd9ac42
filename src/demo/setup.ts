/**
 * What the demo sets up before the agent runs, all through public interfaces: the service's
 * admin API (organization, approver team, API keys, the custom rule), the workspace folder the
 * filesystem MCP server serves, and the sidecar's environment — the same variables the
 * operator's admission webhook injects into a pod.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { DemoError } from "./stack.js";

const require = createRequire(import.meta.url);

/** The demo's organization and its approver. */
export const ORG = "demo-corp";
export const APPROVER = "approver@demo-corp.example";

/** One JSON call of the service's HTTP API with a bearer token; throws on a non-2xx answer. */
export async function api(base: string, token: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new DemoError(`${method} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Creates the organization, its approver team, a client and an admin API key, and the custom rule. */
export async function bootstrapOrganization(
  base: string,
  adminToken: string,
): Promise<{ clientKey: string; adminKey: string }> {
  await api(base, adminToken, "PUT", `/v1/admin/organizations/${ORG}`, { approval_timeout_hours: 24 });
  await api(base, adminToken, "PUT", `/v1/admin/organizations/${ORG}/approver-teams/finance`, {
    approvers: [{ email: APPROVER }],
  });
  const key = async (name: string, role: string) =>
    (await api(base, adminToken, "POST", `/v1/admin/organizations/${ORG}/api-keys`, { name, role }))
      .api_key as string;
  const clientKey = await key("demo-agent", "client");
  const adminKey = await key("demo-reviewer", "admin");
  await api(base, adminToken, "PUT", `/v1/admin/organizations/${ORG}/policies/rules`, {
    config: {
      custom_rules: [
        {
          name: "no-bulk-memory-deletes",
          match: { action_name: "delete_*", payload: { count: { gte: 10 } } },
          outcome: "deny",
          reason: "Deleting 10 or more memory entities in one call is forbidden",
          remediation: "Delete in batches of fewer than 10 after review",
        },
      ],
    },
  });
  return { clientKey, adminKey };
}

/** The folder the filesystem MCP server serves: research notes and an invoice. */
export function prepareWorkspace(dir: string): void {
  mkdirSync(dir);
  writeFileSync(path.join(dir, "notes.md"), "# Q3 research notes\nRevenue grew 12% quarter over quarter.\n");
  writeFileSync(path.join(dir, "invoice-INV-7.txt"), "Invoice INV-7: 7,500.00 USD due to Globex Corp.\n");
}

/**
 * The sidecar's environment: the service, the mounted API key file, its two listeners and two
 * MCP upstreams over stdio — @modelcontextprotocol/server-filesystem on `workspace` ("files")
 * and @modelcontextprotocol/server-memory with its file in `dir` ("memory").
 */
export function sidecarEnv(opts: {
  serviceUrl: string;
  apiKeyFile: string;
  grpcAddress: string;
  httpAddress: string;
  workspace: string;
  memoryFile: string;
}): Record<string, string> {
  return {
    TOLLGATE_SERVICE_URL: opts.serviceUrl,
    TOLLGATE_API_KEY_FILE: opts.apiKeyFile,
    TOLLGATE_ORGANIZATION: ORG,
    TOLLGATE_GRPC_ADDRESS: opts.grpcAddress,
    TOLLGATE_HTTP_ADDRESS: opts.httpAddress,
    TOLLGATE_UPSTREAMS: JSON.stringify([
      {
        name: "files",
        type: "mcp",
        transport: "stdio",
        command: process.execPath,
        args: [require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"), opts.workspace],
      },
      {
        name: "memory",
        type: "mcp",
        transport: "stdio",
        command: process.execPath,
        args: [require.resolve("@modelcontextprotocol/server-memory/dist/index.js")],
        env: { MEMORY_FILE_PATH: opts.memoryFile },
      },
    ]),
    LOG_LEVEL: "warn",
  };
}
