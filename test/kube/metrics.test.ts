/**
 * The operator's /metrics exposition, validated by `promtool check metrics` (issue 8): the real
 * operator process (`node --import tsx operator/main.ts`, default process metrics on) against
 * the real control plane and the real service, scraped after it reconciled the examples.
 * Fails when promtool is missing.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { promtoolCheckMetrics, sample, scrape } from "../support/promtool.js";
import { startTestService, type TestService } from "../support/service.js";
import {
  type KubeEnv,
  type OperatorProcess,
  root,
  spawnOperator,
  startKubeEnv,
  tokenFile,
  waitReady,
} from "./helpers.js";

describe("operator metrics pass promtool check metrics", () => {
  let env: KubeEnv;
  let svc: TestService;
  let op: OperatorProcess;

  beforeAll(async () => {
    env = await startKubeEnv();
    svc = await startTestService({ listen: true });
    op = await spawnOperator(env, {
      serviceUrl: svc.url,
      adminTokenFile: await tokenFile(env, svc),
      identity: "metrics-op",
    });
  });
  afterAll(async () => {
    await op?.terminate();
    await svc?.close();
    await env?.stop();
  });

  it("after reconciling the examples the exposition lints clean", async () => {
    await env.k(["apply", "-f", path.join(root, "examples")]);
    await waitReady(env, "organization", "acme");
    const text = await scrape(`http://127.0.0.1:${op.healthPort}/metrics`);
    const lint = promtoolCheckMetrics(text);
    expect(lint, text).toEqual({ code: 0, problems: [] });
    expect(sample(text, "tollgate_operator_leader")).toBe(1);
    expect(
      sample(text, 'tollgate_operator_reconciles_total{kind="Organization",result="success"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).toMatch(
      /^tollgate_operator_build_info\{version="[^"]+",commit="[^"]+",nodejs_version="[^"]+"\} 1$/m,
    );
    expect(text).not.toMatch(/_active_handles_total/);
  });
});
