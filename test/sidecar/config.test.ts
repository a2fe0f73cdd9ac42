/**
 * Sidecar configuration: environment over file, defaults, upstream validation, errors naming
 * the variable, the API key file.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, describeConfig, loadConfig, readApiKey } from "../../sidecar/config.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "tg-sidecar-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};
const issues = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return (err as ConfigError).issues.join("\n");
};

describe("sidecar configuration", () => {
  it("applies the defaults the webhook relies on", async () => {
    const c = await loadConfig({ TOLLGATE_SERVICE_URL: "http://tollgate.tollgate-system:8000" });
    expect(c).toMatchObject({
      serviceUrl: "http://tollgate.tollgate-system:8000",
      apiKeyFile: "/var/run/tollgate/api-key",
      grpcAddress: "127.0.0.1:50051",
      httpAddress: "127.0.0.1:9090",
      probeAddress: null,
      upstreams: [],
      failModes: null,
      mcpUpstream: null,
      maxPayloadBytes: 256 * 1024,
      logLevel: "info",
    });
  });

  it("TOLLGATE_PROBE_ADDRESS turns on the probe face (the webhook sets 0.0.0.0:9091)", async () => {
    const c = await loadConfig({
      TOLLGATE_SERVICE_URL: "http://tollgate.tollgate-system:8000",
      TOLLGATE_PROBE_ADDRESS: "0.0.0.0:9091",
    });
    expect(c.probeAddress).toBe("0.0.0.0:9091");
    expect(c.httpAddress).toBe("127.0.0.1:9090");
    expect(
      await issues(loadConfig({ TOLLGATE_SERVICE_URL: "http://x:8000", TOLLGATE_PROBE_ADDRESS: "9091" })),
    ).toMatch(/TOLLGATE_PROBE_ADDRESS/);
  });

  it("reads a YAML file and lets the environment win; upstreams from TOLLGATE_UPSTREAMS_FILE", async () => {
    const config = file(
      "sidecar.yaml",
      [
        "service_url: http://from-file:8000",
        "grpc_address: 0.0.0.0:6000",
        "fail_modes: { financial: allow }",
        "log_level: debug",
      ].join("\n"),
    );
    const upstreams = file(
      "upstreams.yaml",
      [
        "upstreams:",
        "  - { name: search, type: http, url: 'http://127.0.0.1:8080/search', timeout_ms: 1500, headers: { x-token: s3cret } }",
        "  - { name: memory, type: mcp, transport: stdio, command: npx, args: [mcp-server-memory], env: { MEMORY_FILE_PATH: /tmp/m } }",
        "  - { name: remote, type: mcp, transport: streamable_http, url: 'http://mcp.internal/mcp' }",
      ].join("\n"),
    );
    const c = await loadConfig(
      {
        TOLLGATE_CONFIG_FILE: config,
        TOLLGATE_SERVICE_URL: "http://from-env:8000",
        TOLLGATE_UPSTREAMS_FILE: upstreams,
        TOLLGATE_MCP_UPSTREAM: "memory",
        TOLLGATE_AGENT_NAME: "researcher",
      },
      undefined,
    );
    expect(c.serviceUrl).toBe("http://from-env:8000");
    expect(c.grpcAddress).toBe("0.0.0.0:6000");
    expect(c.failModes).toEqual({ financial: "allow" });
    expect(c.logLevel).toBe("debug");
    expect(c.agentName).toBe("researcher");
    expect(c.upstreams.map((u) => u.name)).toEqual(["search", "memory", "remote"]);
    expect(c.upstreams[0]).toMatchObject({ type: "http", timeout_ms: 1500 });
    expect(c.upstreams[2]).toMatchObject({ type: "mcp", transport: "streamable_http", timeout_ms: 60_000 });
    const described = JSON.stringify(describeConfig(c));
    expect(described).not.toContain("s3cret");
    expect(described).not.toContain("/tmp/m");
  });

  it("names the variable of every invalid setting", async () => {
    const text = await issues(
      loadConfig({
        TOLLGATE_SERVICE_URL: "ftp://nope",
        TOLLGATE_GRPC_ADDRESS: "localhost",
        TOLLGATE_UPSTREAMS: JSON.stringify([
          { name: "a", type: "http", url: "http://x/a" },
          { name: "a", type: "http", url: "http://x/b" },
          { name: "m", type: "mcp", transport: "stdio" },
        ]),
        TOLLGATE_FAIL_MODES: '{"financial":"maybe"}',
        TOLLGATE_MCP_UPSTREAM: "a",
      }),
    );
    expect(text).toContain("TOLLGATE_SERVICE_URL");
    expect(text).toContain("TOLLGATE_GRPC_ADDRESS");
    expect(text).toMatch(/TOLLGATE_UPSTREAMS\.2\.command/);
    expect(text).toContain("TOLLGATE_FAIL_MODES.financial");
    expect(await issues(loadConfig({ TOLLGATE_UPSTREAMS: "[not json" }))).toContain(
      "TOLLGATE_UPSTREAMS: must be JSON",
    );
    const dup = await issues(
      loadConfig({
        TOLLGATE_SERVICE_URL: "http://s",
        TOLLGATE_UPSTREAMS: JSON.stringify([
          { name: "a", type: "http", url: "http://x/a" },
          { name: "a", type: "http", url: "http://x/b" },
        ]),
        TOLLGATE_MCP_UPSTREAM: "a",
      }),
    );
    expect(dup).toContain('TOLLGATE_UPSTREAMS.1.name: duplicate upstream "a"');
    expect(dup).toContain('TOLLGATE_MCP_UPSTREAM: "a" is not a configured mcp upstream');
    expect(
      await issues(loadConfig({ TOLLGATE_SERVICE_URL: "http://s" }, path.join(dir, "missing.yaml"))),
    ).toContain("missing.yaml");
  });

  it("reads the API key from its file and never echoes it", async () => {
    expect(await readApiKey(file("key", "tg_abc123\n"))).toBe("tg_abc123");
    const two = await issues(readApiKey(file("two-keys", "tg_one tg_two")));
    expect(two).toContain("TOLLGATE_API_KEY_FILE");
    expect(two).not.toContain("tg_one");
    expect(await issues(readApiKey(file("empty", "  \n")))).toContain("exactly one API key");
    expect(await issues(readApiKey(path.join(dir, "absent")))).toContain("ENOENT");
  });

  it("credentials: a Secret reference per http or streamable_http upstream, refused on stdio", async () => {
    const base = { TOLLGATE_SERVICE_URL: "http://s" };
    const c = await loadConfig({
      ...base,
      TOLLGATE_CREDENTIALS_DIR: "/mnt/creds",
      TOLLGATE_UPSTREAMS: JSON.stringify([
        {
          name: "payments",
          type: "http",
          url: "http://payments.tools.svc/pay",
          credentials: { secretName: "payments-credentials", type: "bearer" },
        },
        {
          name: "crm",
          type: "mcp",
          transport: "streamable_http",
          url: "http://crm.tools.svc/mcp",
          credentials: {
            secretName: "crm-oauth",
            type: "oauth2_client_credentials",
            issuer: "https://login.example.com",
            scope: "crm.read crm.write",
          },
        },
        { name: "keyed", type: "http", url: "http://k/", credentials: { secretName: "k", type: "headers" } },
      ]),
    });
    expect(c.credentialsDir).toBe("/mnt/creds");
    expect(c.upstreams[0]).toMatchObject({ credentials: { type: "bearer", key: "token" } });
    expect(c.upstreams[1]).toMatchObject({
      credentials: { type: "oauth2_client_credentials", authMethod: "client_secret_basic" },
    });
    expect((await loadConfig(base)).credentialsDir).toBe("/var/run/tollgate/credentials");
    const described = describeConfig(c).upstreams as Record<string, unknown>[];
    expect(described.map((u) => u.credentials)).toEqual([
      { type: "bearer", secretName: "payments-credentials", key: "token" },
      {
        type: "oauth2_client_credentials",
        secretName: "crm-oauth",
        issuer: "https://login.example.com",
        scope: "crm.read crm.write",
        authMethod: "client_secret_basic",
      },
      { type: "headers", secretName: "k" },
    ]);

    const bad = (upstream: Record<string, unknown>) =>
      issues(loadConfig({ ...base, TOLLGATE_UPSTREAMS: JSON.stringify([{ name: "u", ...upstream }]) }));
    expect(
      await bad({
        type: "mcp",
        transport: "stdio",
        command: "x",
        credentials: { secretName: "s", type: "bearer" },
      }),
    ).toMatch(/TOLLGATE_UPSTREAMS\.0\.credentials: stdio upstreams take no credentials/);
    expect(
      await bad({
        type: "http",
        url: "http://x/",
        credentials: { secretName: "Not_A_Name", type: "bearer" },
      }),
    ).toMatch(/TOLLGATE_UPSTREAMS\.0\.credentials\.secretName: must be a Kubernetes Secret name/);
    expect(
      await bad({
        type: "http",
        url: "http://x/",
        credentials: { secretName: "s", type: "bearer", value: "t0k" },
      }),
    ).toMatch(/TOLLGATE_UPSTREAMS\.0\.credentials: .*value/);
    expect(
      await bad({
        type: "http",
        url: "http://x/",
        credentials: { secretName: "s", type: "oauth2_client_credentials", scope: "a" },
      }),
    ).toContain("TOLLGATE_UPSTREAMS.0.credentials.tokenUrl: exactly one of tokenUrl and issuer is required");
    expect(
      await bad({
        type: "http",
        url: "http://x/",
        headers: { Authorization: "Bearer static" },
        credentials: { secretName: "s", type: "bearer" },
      }),
    ).toContain("TOLLGATE_UPSTREAMS.0.headers: an Authorization header conflicts with credentials");
    expect(
      await bad({
        type: "http",
        url: "http://x/",
        credentials: { secretName: "s", type: "bearer", key: "../x" },
      }),
    ).toMatch(/credentials\.key/);
    expect(await issues(loadConfig({ ...base, TOLLGATE_CREDENTIALS_DIR: "relative/dir" }))).toContain(
      "TOLLGATE_CREDENTIALS_DIR: must be an absolute path",
    );
  });
});
