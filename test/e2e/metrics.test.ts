/**
 * Metrics exposition, validated by `promtool check metrics` (issue 8): the real service process
 * (`npm start` on embedded PGlite, default process metrics on) and the real sidecar process
 * (`tsx sidecar/main.ts`), scraped after real traffic. The test fails when promtool is missing.
 * The operator's endpoint is checked in test/kube/metrics.test.ts (it needs a control plane).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOperatorMetrics } from "../../operator/metrics.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { apiCall } from "../support/http.js";
import { freePort } from "../support/postgres.js";
import { promtoolCheckMetrics, sample, scrape } from "../support/promtool.js";

const root = path.resolve(import.meta.dirname, "../..");

interface Proc {
  child: ChildProcess;
  logs: () => string;
}

function start(args: string[], env: Record<string, string>): Proc {
  let logs = "";
  // node --import tsx (not the tsx wrapper) so that killing the child kills the process itself
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (logs += d));
  child.stderr!.on("data", (d) => (logs += d));
  return { child, logs: () => logs };
}

async function waitReady(url: string, proc: Proc): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    if (proc.child.exitCode !== null)
      throw new Error(`process exited (${proc.child.exitCode}):\n${proc.logs()}`);
    if (Date.now() > deadline) throw new Error(`${url} did not become ready:\n${proc.logs()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function rpc<Res>(client: grpc.Client, method: string, req: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
    fn.call(client, req, (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)));
  });
}

describe("metrics expositions pass promtool check metrics", () => {
  let dir: string;
  let base: string;
  let service: Proc;
  let sidecar: Proc;
  let sidecarHttp: string;
  let sidecarGrpc: string;
  let tool: http.Server;
  let admin: string;
  let clientKey = "";
  const expositions: string[] = [];
  let adminKey = "";

  const api = (method: string, url: string, token: string, body?: unknown) =>
    apiCall(base, token, method, url, body);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-metrics-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = start(["src/service/main.ts"], {
      PORT: String(port),
      TOLLGATE_DATA_DIR: path.join(dir, ".tollgate"),
      LOG_LEVEL: "warn",
    });
    await waitReady(`${base}/readyz`, service);
    admin = readFileSync(path.join(dir, ".tollgate", "admin-token"), "utf8").trim();
    await api("PUT", "/v1/admin/organizations/metrics-org", admin, { approval_timeout_hours: 24 });
    const key = async (role: string) =>
      (
        await api("POST", "/v1/admin/organizations/metrics-org/api-keys", admin, {
          name: `${role}-key`,
          role,
        })
      ).json.api_key as string;
    clientKey = await key("client");
    adminKey = await key("admin");

    tool = http.createServer((req, res) => {
      req.resume().on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    await new Promise<void>((r) => tool.listen(0, "127.0.0.1", r));
    const keyFile = path.join(dir, "api-key");
    writeFileSync(keyFile, `${clientKey}\n`, { mode: 0o600 });
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    sidecarHttp = `http://127.0.0.1:${httpPort}`;
    sidecarGrpc = `127.0.0.1:${grpcPort}`;
    sidecar = start(["sidecar/main.ts"], {
      TOLLGATE_SERVICE_URL: base,
      TOLLGATE_API_KEY_FILE: keyFile,
      TOLLGATE_GRPC_ADDRESS: sidecarGrpc,
      TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TOLLGATE_UPSTREAMS: JSON.stringify([
        {
          name: "tools",
          type: "http",
          url: `http://127.0.0.1:${(tool.address() as { port: number }).port}/`,
        },
      ]),
      LOG_LEVEL: "warn",
    });
    await waitReady(`${sidecarHttp}/readyz`, sidecar);
  });

  afterAll(async () => {
    for (const p of [sidecar, service]) if (p && p.child.exitCode === null) p.child.kill("SIGKILL");
    tool?.closeAllConnections();
    await new Promise((r) => (tool ? tool.close(r) : r(undefined)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("service: decisions, approvals, receipts, verification and legacy routes, then a clean lint", async () => {
    const chain = (await api("POST", "/v1/chains", clientKey, { name: "metrics-run" })).json
      .chain_id as string;
    const act = (action_name: string, payload: Record<string, unknown>) =>
      api("POST", `/v1/chains/${chain}/actions`, clientKey, {
        agent_name: "agent",
        action_type: "tool_call",
        action_name,
        payload,
      });
    expect((await act("read_invoice", { id: "INV-1" })).json.policy_decision).toBe("allow");
    const pay = (await act("pay_invoice", { amount_usd: 7500 })).json;
    expect(pay.policy_decision).toBe("require_approval");
    const pending = await scrape(`${base}/metrics`);
    expect(sample(pending, "tollgate_approvals_pending")).toBe(1);
    await api("POST", `/v1/approvals/${pay.approval_id}/decision`, adminKey, {
      decision: "approve",
      notes: "ok",
    });
    const done = (await api("POST", `/v1/chains/${chain}/complete`, clientKey)).json;
    const receiptId = done.receipt_id as string;
    expect(receiptId).toMatch(/^[0-9a-f-]{36}$/);
    const v2 = (await api("GET", `/v1/verification/v2/receipts/${receiptId}`, adminKey)).json;
    expect(v2.overall_status).toBe("valid");
    const legacy = await api("GET", `/v1/receipts/${receiptId}/verify`, adminKey);
    expect(legacy.headers.get("deprecation")).toBe("true");
    const token = (
      await api("POST", "/v1/public-verification-tokens", adminKey, {
        artifact_type: "receipt",
        artifact_id: receiptId,
      })
    ).json;
    expect((await fetch(`${base}${token.public_path}`)).status).toBe(200);
    expect((await fetch(`${base}/no-such-route`)).status).toBe(404);

    const text = await scrape(`${base}/metrics`);
    expositions.push(text);
    const lint = promtoolCheckMetrics(text);
    expect(lint, text).toEqual({ code: 0, problems: [] });

    // The traffic shows in the series (so the lint ran over populated metrics, not empty ones).
    expect(sample(text, 'tollgate_decisions_total{outcome="allow"}')).toBe(1);
    expect(sample(text, 'tollgate_decisions_total{outcome="require_approval"}')).toBe(1);
    expect(sample(text, "tollgate_record_action_duration_seconds_count")).toBe(2);
    expect(sample(text, "tollgate_approvals_pending")).toBe(0);
    expect(sample(text, 'tollgate_approval_wait_seconds_count{status="approved"}')).toBe(1);
    expect(sample(text, 'tollgate_receipts_issued_total{status="completed"}')).toBe(1);
    expect(
      sample(
        text,
        'tollgate_verification_results_total{surface="authenticated",artifact_type="receipt",status="valid"}',
      ),
    ).toBe(1);
    expect(
      sample(
        text,
        'tollgate_verification_results_total{surface="public",artifact_type="receipt",status="valid"}',
      ),
    ).toBe(1);
    expect(
      sample(text, 'tollgate_legacy_route_requests_total{route="/v1/receipts/{receipt_id}/verify"}'),
    ).toBe(1);
    expect(sample(text, "tollgate_outbox_backlog")).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes /m);
    expect(text).toMatch(
      /^tollgate_service_build_info\{version="[^"]+",commit="[^"]+",nodejs_version="v\d+[^"]*"\} 1$/m,
    );
    // RED metrics by route template and status class.
    expect(
      sample(
        text,
        'http_server_request_duration_seconds_count{http_request_method="POST",http_route="/v1/chains/:chain_id/actions",http_response_status_class="2xx"}',
      ),
    ).toBeGreaterThan(0);
    expect(
      sample(
        text,
        'http_server_request_duration_seconds_count{http_request_method="GET",http_route="unmatched",http_response_status_class="4xx"}',
      ),
    ).toBeGreaterThan(0);
  });

  it("sidecar: invocations through gRPC, then a clean lint", async () => {
    const client = createGatewayClient(sidecarGrpc);
    try {
      const { chain_id } = await rpc<{ chain_id: string }>(client, "OpenChain", { name: "sidecar-metrics" });
      const r = await rpc<{ forwarded: boolean; decision: { policy_decision: string } }>(client, "Invoke", {
        chain_id,
        agent_name: "agent",
        action_name: "read_file",
        payload: jsonToStruct({ path: "/tmp/a" }),
        upstream: "tools",
      });
      expect(r.forwarded).toBe(true);
      expect(r.decision.policy_decision).toBe("allow");
      await rpc(client, "CompleteChain", { chain_id });
    } finally {
      client.close();
    }
    const text = await scrape(`${sidecarHttp}/metrics`);
    expositions.push(text);
    const lint = promtoolCheckMetrics(text);
    expect(lint, text).toEqual({ code: 0, problems: [] });
    expect(sample(text, 'tollgate_sidecar_invocations_total{decision="allow",surface="grpc"}')).toBe(1);
    expect(sample(text, "tollgate_sidecar_decision_duration_seconds_count")).toBe(1);
    expect(
      sample(text, 'tollgate_sidecar_upstream_duration_seconds_count{upstream="tools",result="ok"}'),
    ).toBe(1);
    // Standard names, as the service's: standard dashboards see the sidecar.
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(
      /^tollgate_sidecar_build_info\{version="[^"]+",commit="[^"]+",nodejs_version="v\d+[^"]*"\} 1$/m,
    );
  });

  it("the chart's Grafana dashboard: every query parses (promtool check rules) and names only exposed metrics", async () => {
    expect(expositions).toHaveLength(2); // service and sidecar, scraped above
    const operator = createOperatorMetrics({ defaultMetrics: false });
    const typed = [...expositions, await operator.registry.metrics()].flatMap((text) =>
      [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1]!, type: m[2]! })),
    );
    const series = new Set(
      typed.flatMap(({ name, type }) =>
        type === "histogram" ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name],
      ),
    );
    const dashboard = JSON.parse(
      readFileSync(path.join(root, "charts/tollgate/dashboards/tollgate.json"), "utf8"),
    );
    const exprs: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) =>
      p.targets.map((t) => t.expr),
    );
    expect(exprs.length).toBeGreaterThan(8);
    for (const expr of exprs) {
      for (const name of expr.match(/\b(?:tollgate|process|nodejs)_[a-z_]+/g) ?? []) {
        expect(series.has(name), `${name} in "${expr}" is not exposed`).toBe(true);
      }
    }
    // Grafana's variables become what Prometheus would see; promtool parses every expression.
    const rules = {
      groups: [
        {
          name: "dashboard",
          rules: exprs.map((expr, i) => ({
            record: `dashboard:query_${i}`,
            expr: expr.replaceAll("$__rate_interval", "5m").replaceAll("$job", ".*"),
          })),
        },
      ],
    };
    const file = path.join(dir, "dashboard-rules.yaml");
    writeFileSync(file, JSON.stringify(rules));
    const check = spawnSync("promtool", ["check", "rules", file], { encoding: "utf8" });
    if (check.error) throw new Error(`promtool is required: ${check.error.message}`);
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(new RegExp(`SUCCESS: ${exprs.length} rules found`));
  });
});
