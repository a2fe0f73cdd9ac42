/**
 * The sidecar as grpcurl sees it, by server reflection alone (no .proto files given): `list`,
 * `describe` of every service, method and message type, grpc.health.v1.Health/Check, and a
 * governed OpenChain → Invoke → CompleteChain. grpcurl is built from the Go module proxy by
 * scripts/build-grpcurl.sh (cached); the test fails when it cannot be built.
 */
import { execFile, execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./harness.js";

const root = path.resolve(import.meta.dirname, "../..");

describe("grpcurl against the sidecar, by reflection alone", () => {
  let s: Stack;
  let grpcurlBin: string;
  // Asynchronous: the sidecar under test runs in this process and must keep answering.
  const grpcurl = (...args: string[]) =>
    new Promise<{ code: number; out: string; err: string }>((resolve) =>
      execFile(grpcurlBin, ["-plaintext", ...args], { encoding: "utf8", timeout: 30_000 }, (e, out, err) =>
        resolve({ code: e ? (typeof e.code === "number" ? e.code : 1) : 0, out, err }),
      ),
    );
  const ok = async (...args: string[]) => {
    const r = await grpcurl(...args);
    expect(r.code, `grpcurl ${args.join(" ")}\n${r.err}`).toBe(0);
    return r.out;
  };

  beforeAll(async () => {
    grpcurlBin = execFileSync("bash", [path.join(root, "scripts/build-grpcurl.sh")], { encoding: "utf8" })
      .trim()
      .split("\n")
      .at(-1)!;
    s = await startStack({ slug: "grpcurl-org" });
    const policy = await s.admin("PUT", `/v1/admin/organizations/${s.org.slug}/policies/no-drop`, {
      config: {
        custom_rules: [
          { name: "no-drop", match: { action_name: "drop_table" }, outcome: "deny", reason: "never" },
        ],
      },
    });
    expect(policy.statusCode, policy.body).toBeLessThan(300);
  }, 600_000);
  afterAll(async () => s?.close());

  it("lists the gateway, health and reflection services", async () => {
    const services = (await ok(s.sidecar.grpcAddress, "list")).trim().split("\n");
    expect(services).toEqual(
      expect.arrayContaining([
        "tollgate.v1.ToolGateway",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
      ]),
    );
  });

  it("describes every service, method and message", async () => {
    for (const service of ["tollgate.v1.ToolGateway", "grpc.health.v1.Health"]) {
      const out = await ok(s.sidecar.grpcAddress, "describe", service);
      expect(out).toContain(`${service} is a service`);
      const methods = [
        ...out.matchAll(/rpc (\w+) \( (?:stream )?\.?([\w.]+) \) returns \( (?:stream )?\.?([\w.]+) \)/g),
      ];
      expect(methods.length).toBeGreaterThan(0);
      for (const [, method, input, output] of methods) {
        expect(await ok(s.sidecar.grpcAddress, "describe", `${service}.${method}`)).toContain("is a method");
        for (const type of [input!, output!])
          expect(await ok(s.sidecar.grpcAddress, "describe", type)).toContain("is a message");
      }
    }
    // The type that used to break reflection (a field of google.protobuf.Struct).
    expect(await ok(s.sidecar.grpcAddress, "describe", "tollgate.v1.OpenChainRequest")).toContain(
      ".google.protobuf.Struct metadata",
    );
    expect(await ok(s.sidecar.grpcAddress, "describe", "google.protobuf.Struct")).toContain("is a message");
  });

  it("Health/Check answers SERVING for the gateway", async () => {
    const out = await ok(
      "-d",
      '{"service":"tollgate.v1.ToolGateway"}',
      s.sidecar.grpcAddress,
      "grpc.health.v1.Health/Check",
    );
    expect(JSON.parse(out)).toEqual({ status: "SERVING" });
  });

  it("OpenChain → Invoke (forwarded) → CompleteChain", async () => {
    const { chain_id: chainId } = JSON.parse(
      await ok(
        "-d",
        '{"name":"grpcurl-chain","metadata":{"via":"grpcurl"}}',
        s.sidecar.grpcAddress,
        "tollgate.v1.ToolGateway/OpenChain",
      ),
    );
    expect(chainId).toMatch(/^[0-9a-f-]{36}$/);
    const invoked = JSON.parse(
      await ok(
        "-d",
        JSON.stringify({
          chain_id: chainId,
          agent_name: "worker",
          action_name: "read_file",
          payload: { path: "/tmp/a" },
          upstream: "tools",
        }),
        s.sidecar.grpcAddress,
        "tollgate.v1.ToolGateway/Invoke",
      ),
    );
    expect(invoked.decision.policy_decision).toBe("allow");
    expect(invoked.forwarded).toBe(true);
    expect(s.tools.calls.some((c) => c.headers["x-tollgate-action-name"] === "read_file")).toBe(true);
    const done = JSON.parse(
      await ok(
        "-d",
        JSON.stringify({ chain_id: chainId }),
        s.sidecar.grpcAddress,
        "tollgate.v1.ToolGateway/CompleteChain",
      ),
    );
    expect(done.receipt_number).toMatch(/^PR-\d{4}-\d{5}$/);
  });

  it("a denied call is PermissionDenied with the tollgate-error-code trailer", async () => {
    const chainId = JSON.parse(
      await ok("-d", '{"name":"deny"}', s.sidecar.grpcAddress, "tollgate.v1.ToolGateway/OpenChain"),
    ).chain_id;
    const r = await grpcurl(
      "-v",
      "-d",
      JSON.stringify({
        chain_id: chainId,
        agent_name: "w",
        action_name: "drop_table",
        payload: {},
        upstream: "tools",
      }),
      s.sidecar.grpcAddress,
      "tollgate.v1.ToolGateway/Invoke",
    );
    expect(r.code).not.toBe(0);
    expect(`${r.out}${r.err}`).toMatch(/Code: PermissionDenied/);
    expect(`${r.out}${r.err}`).toMatch(/tollgate-error-code: ACTION_DENIED/);
    // The google.rpc.ErrorInfo in grpc-status-details-bin, decoded through reflection alone.
    expect(r.err).toMatch(/"@type": "type\.googleapis\.com\/google\.rpc\.ErrorInfo"/);
    expect(r.err).toMatch(/"reason": "ACTION_DENIED"/);
    expect(r.err).toMatch(/"domain": "tollgate\.dev"/);
  });

  it("describes google.rpc.ErrorInfo (google/rpc/error_details.proto)", async () => {
    expect(await ok(s.sidecar.grpcAddress, "describe", "google.rpc.ErrorInfo")).toContain("is a message");
    expect(await ok(s.sidecar.grpcAddress, "describe", "google.rpc.BadRequest")).toContain("is a message");
  });
});
