/**
 * End to end on the real control plane (issue 8): kubectl applies the CRDs and examples/, the
 * operator reconciles them into the real service, a Pod created in the injected namespace is
 * stored with the sidecar, and the sidecar process then runs locally with exactly the
 * configuration the webhook injected (pods do not run without a kubelet). Only what a kubelet
 * would provide is substituted: the mounted API-key Secret becomes a local file with the Secret's
 * bytes, and the loopback ports are free ones. A governed tool call goes through it: the
 * GovernancePolicy from examples/ denies a production deletion, a read is allowed, and the chain
 * ends with a receipt verified through /v1/verification/v2.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningOperator } from "../../operator/operator.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { createGatewayClient, decodeDecision } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { freePorts } from "../support/controlplane.js";
import { startTestService, type TestService } from "../support/service.js";
import {
  type KubeEnv,
  OPERATOR_NAMESPACE,
  root,
  startKubeEnv,
  startTestOperator,
  testOperatorConfig,
  tokenFile,
  waitFor,
  waitReady,
} from "./helpers.js";

const NS = "acme-agents";

function rpc<Res>(client: grpc.Client, method: string, req: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
    fn.call(client, req, (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)));
  });
}

describe("CRDs → operator → service; injected Pod → sidecar → governed call → verified receipt", () => {
  let env: KubeEnv;
  let svc: TestService;
  let op: RunningOperator;
  let sidecar: ChildProcess | undefined;
  let sidecarOut = "";

  beforeAll(async () => {
    env = await startKubeEnv();
    svc = await startTestService({ listen: true });
    const base = testOperatorConfig(env, {
      serviceUrl: svc.url,
      adminTokenFile: await tokenFile(env, svc),
      identity: "e2e",
    });
    // Injected sidecars call the service the test runs (in a cluster: the Service's DNS name).
    op = await startTestOperator({ ...base, sidecar: { ...base.sidecar, serviceUrl: svc.url } });
    await env.apply(
      sidecarInjectorConfiguration({
        target: { url: `https://127.0.0.1:${op.webhookPort}/mutate` },
        operatorNamespace: OPERATOR_NAMESPACE,
        timeoutSeconds: 10,
      }),
    );
  });
  afterAll(async () => {
    if (sidecar && sidecar.exitCode === null) sidecar.kill("SIGKILL");
    await op?.stop();
    await svc?.close();
    await env?.stop();
  });

  it("drives a governed tool call through the sidecar configured exactly as injected", async () => {
    await env.k(["apply", "-f", path.join(root, "examples")]);
    await waitReady(env, "organization", "acme");
    await waitReady(env, "governancepolicy", "payments", NS);
    const secret = await waitFor("API key Secret minted into acme-agents", () =>
      env.get<{ data: Record<string, string> }>("secret", "tollgate-api-key", NS),
    );
    // Wait until the webhook serves with its caBundle published, then create the Pod.
    await waitFor("caBundle published", async () => {
      const c = await env.get("mutatingwebhookconfiguration", "tollgate-sidecar-injector");
      return c?.webhooks.every((w: { clientConfig: { caBundle?: string } }) => w.clientConfig.caBundle);
    });
    await env.apply({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "billing-agent-0", namespace: NS, labels: { app: "billing-agent" } },
      spec: { containers: [{ name: "agent", image: "registry.example/billing-agent:1" }] },
    });
    const pod = await env.get("pod", "billing-agent-0", NS);
    const injected = pod.spec.containers.find((c: { name: string }) => c.name === "tollgate-sidecar");
    expect(injected, JSON.stringify(pod.spec)).toBeTruthy();
    const injectedEnv: Record<string, string> = Object.fromEntries(
      (injected.env as { name: string; value?: string }[]).map((e) => [e.name, e.value ?? ""]),
    );
    expect(injectedEnv.TOLLGATE_SERVICE_URL).toBe(svc.url);
    expect(injectedEnv.TOLLGATE_ORGANIZATION).toBe("acme");
    const mount = injected.volumeMounts.find((m: { name: string }) => m.name === "tollgate-api-key");
    expect(injectedEnv.TOLLGATE_API_KEY_FILE?.startsWith(`${mount.mountPath}/`)).toBe(true);

    // What a kubelet would do: project the Secret into a file, give the process its env.
    const keyFile = path.join(env.cp.dir, "api-key");
    writeFileSync(keyFile, Buffer.from(secret.data["api-key"] ?? "", "base64"), { mode: 0o600 });
    const [grpcPort, httpPort] = await freePorts(2);
    sidecar = spawn(process.execPath, ["--import", "tsx", path.join(root, "sidecar/main.ts")], {
      cwd: root,
      env: {
        ...process.env,
        ...injectedEnv,
        TOLLGATE_API_KEY_FILE: keyFile,
        TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    sidecar.stdout!.on("data", (d) => (sidecarOut += d));
    sidecar.stderr!.on("data", (d) => (sidecarOut += d));
    await waitFor(
      "sidecar ready",
      async () => {
        if (sidecar!.exitCode !== null) throw new Error(`sidecar exited: ${sidecarOut}`);
        return (await fetch(`http://127.0.0.1:${httpPort}/readyz`)).ok;
      },
      60_000,
    );

    const client = createGatewayClient(`127.0.0.1:${grpcPort}`);
    try {
      const { chain_id } = await rpc<{ chain_id: string }>(client, "OpenChain", { name: "k8s-e2e" });
      const read = await rpc<{ decision: { policy_decision: string } }>(client, "Invoke", {
        chain_id,
        agent_name: injectedEnv.TOLLGATE_AGENT_NAME,
        action_name: "read_invoice",
        payload: jsonToStruct({ id: "INV-7" }),
      });
      expect(read.decision.policy_decision).toBe("allow");

      // The GovernancePolicy's custom rule, reconciled into the service, decides this one.
      const denied = await rpc(client, "Invoke", {
        chain_id,
        agent_name: injectedEnv.TOLLGATE_AGENT_NAME,
        action_name: "delete_records",
        payload: jsonToStruct({ environment: "production", ids: ["a"] }),
      }).then(
        () => {
          throw new Error("the production deletion was allowed");
        },
        (err: grpc.ServiceError) => err,
      );
      expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
      const bin = denied.metadata.get("tollgate-decision-bin")[0] as Buffer;
      expect(decodeDecision(bin)).toMatchObject({
        policy_decision: "deny",
        policy_name: "no-production-deletes",
      });

      const done = await rpc<{ status: string; receipt_id: string }>(client, "CompleteChain", { chain_id });
      expect(done.receipt_id).toMatch(/^[0-9a-f-]{36}$/);
      const key = await svc.call("POST", "/v1/admin/organizations/acme/api-keys", {
        token: svc.adminToken,
        body: { name: "e2e-verifier", role: "admin" },
      });
      expect(key.statusCode, key.body).toBe(201);
      const v = await svc.call("GET", `/v1/verification/v2/receipts/${done.receipt_id}`, {
        token: key.json().api_key,
      });
      expect(v.statusCode, v.body).toBe(200);
      expect(v.json().overall_status).toBe("valid");
    } finally {
      client.close();
    }
  });
});
