/**
 * Re-attach beyond one connection (issue 29), with the official clients unmodified:
 * - a modern-era `requestState` re-attaches to the same approval at another sidecar replica of
 *   the same configuration, and at a sidecar started after the issuing one stopped;
 * - @modelcontextprotocol/client 2.x (modern and legacy eras), the Python `mcp` 2.x client and
 *   the MCP Inspector 2.x CLI, concurrently, each through an approval granted 70 s after it was
 *   seen pending (longer than the TypeScript client's 60 s request timeout): one approval per
 *   call, the tool runs exactly once, the real result reaches the caller. A client whose request
 *   times out is called again the way its user would (a new connection or process): that retry
 *   re-attaches to the same approval.
 * Real service on real PostgreSQL, real server-memory upstream; a missing client fails the test.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../sidecar/config.js";
import { type Sidecar, startSidecar } from "../../sidecar/sidecar.js";
import {
  nextPendingApproval,
  type Stack,
  startMemoryStack,
  toolFromScript,
  waitForReceipt,
} from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, "../..");
/** Longer than the TypeScript client's default request timeout (60 s). */
const APPROVE_AFTER_MS = 70_000;

describe("MCP re-attach across replicas, restarts and sessions, with the official clients", () => {
  let s: Stack;
  let python: string;
  const seen = new Set<string>();
  const others: Sidecar[] = [];

  beforeAll(async () => {
    python = toolFromScript("mcp-client-env.sh");
    s = await startMemoryStack("mcp-clients-org", {
      mcpSessionIdleSeconds: 2,
      servicePublicUrl: "https://tollgate.example.com/",
    });
  }, 600_000);
  afterAll(async () => {
    await Promise.allSettled(others.map((o) => o.close()));
    await s?.close();
  });

  /** Another sidecar of the same configuration (a replica of the pod template). */
  const replica = async () => {
    const sidecar = await startSidecar({
      config: parseConfig(s.configInput),
      apiKey: s.apiKey,
      sdkInternals: { pollIntervalMs: 100 },
      defaultMetrics: false,
    });
    others.push(sidecar);
    return sidecar;
  };
  const mcpUrl = (sidecar: Sidecar) => new URL(`${sidecar.httpUrl}/mcp`);
  const entity = (name: string) => ({
    entities: [{ name, entityType: "person", observations: ["reviewed"] }],
  });
  const connect = async (url: URL, mode: "auto" | "legacy", manual = false) => {
    const client = new Client(
      { name: `ts-${mode}`, version: "2.4.0" },
      { versionNegotiation: { mode }, ...(manual && { inputRequired: { autoFulfill: false } }) },
    );
    await client.connect(new StreamableHTTPClientTransport(url));
    return client;
  };
  /** How many entities named `name` the memory store holds (each run of the tool adds one). */
  const runsOf = async (name: string) => {
    const client = await connect(mcpUrl(s.sidecar), "legacy");
    const r = await client.callTool({ name: "read_graph", arguments: {} });
    await client.close();
    const graph = JSON.parse((r.content as { text: string }[])[0]!.text) as { entities: { name: string }[] };
    return graph.entities.filter((e) => e.name === name).length;
  };
  /** A modern call answered input_required; returns its requestState. */
  const askModern = async (url: URL, name: string) => {
    const client = await connect(url, "auto", true);
    const asked = (await client.callTool(
      { name: "create_entities", arguments: entity(name) },
      { allowInputRequired: true },
    )) as Record<string, unknown>;
    await client.close();
    expect(asked).toMatchObject({ resultType: "input_required", requestState: expect.any(String) });
    return asked.requestState as string;
  };
  const retryModern = async (url: URL, name: string, requestState: string) => {
    const client = await connect(url, "auto", true);
    const r = (await client.callTool(
      { name: "create_entities", arguments: entity(name), requestState } as Parameters<Client["callTool"]>[0],
      { allowInputRequired: true },
    )) as Record<string, unknown>;
    await client.close();
    return r;
  };
  /** Waits until the only event of `chainId` has its outcome (the approved call ran). */
  const outcomeOf = async (chainId: string) => {
    for (let i = 0; i < 600; i++) {
      if ((await s.storedChain(chainId)).events[0]?.outcome) return;
      await sleep(100);
    }
    throw new Error(`the call of chain ${chainId} got no outcome`);
  };
  const expectOneRun = async (name: string, chainId: string) => {
    expect(await runsOf(name)).toBe(1);
    const stored = await s.storedChain(chainId);
    expect(stored.events).toHaveLength(1);
    expect(stored.events[0]).toMatchObject({ outcome: { status: "success" } });
  };

  it("a requestState re-attaches at another replica; the tool runs once there", async () => {
    const other = await replica();
    const state = await askModern(mcpUrl(s.sidecar), "Noether");
    const pending = await nextPendingApproval(s, seen);
    await s.decide(pending.approval_id, "approve");
    const done = await retryModern(mcpUrl(other), "Noether", state);
    expect(done.isError).toBeFalsy();
    expect(JSON.stringify(done.content)).toContain("Noether");
    expect((done._meta as Record<string, unknown>)["tollgate.dev/chain_id"]).toBe(pending.chain_id);
    await expectOneRun("Noether", pending.chain_id);
    await waitForReceipt(s, pending.chain_id, 20_000);
    // Delivered: the state names no wait any more, here or at the issuing replica.
    for (const sidecar of [other, s.sidecar]) {
      const late = await retryModern(mcpUrl(sidecar), "Noether", state);
      expect(late._meta).toMatchObject({ "tollgate.dev/error_code": "NOT_FOUND" });
    }
    expect(await runsOf("Noether")).toBe(1);
  }, 60_000);

  it("a requestState outlives the sidecar that issued it: a sidecar started after it stopped adopts the approval", async () => {
    const first = await replica();
    const state = await askModern(mcpUrl(first), "Hopper");
    const pending = await nextPendingApproval(s, seen);
    await first.drain(1000);
    const restarted = await replica();
    // Still pending: the retry is held, then answered input_required with the same state.
    const approval = (async () => {
      await sleep(1000);
      await s.decide(pending.approval_id, "approve");
    })();
    const done = await retryModern(mcpUrl(restarted), "Hopper", state);
    await approval;
    expect(done.isError).toBeFalsy();
    expect(JSON.stringify(done.content)).toContain("Hopper");
    await expectOneRun("Hopper", pending.chain_id);
    await waitForReceipt(s, pending.chain_id, 20_000);
  }, 60_000);

  it("official clients through an approval granted after 70 s: one approval each, the tool runs once, the result arrives", async () => {
    const url = mcpUrl(s.sidecar);
    const names = {
      modern: "Turing",
      legacy: "Lamarr",
      python: "Franklin",
      inspector: "Shannon",
    } as const;
    const approvals: Promise<string>[] = [];
    // One decision at a time, each once the call it approved has run: server-memory loses one
    // of two concurrent writes (it rewrites its whole file), which would hide a second run.
    let turn = Promise.resolve();
    let approving = true;
    const approver = (async () => {
      while (approving) {
        const fresh = (await s.pendingApprovals()).find((a) => !seen.has(a.approval_id));
        if (!fresh) {
          await sleep(100);
          continue;
        }
        seen.add(fresh.approval_id);
        approvals.push(
          sleep(APPROVE_AFTER_MS).then(() => {
            turn = turn.then(async () => {
              await s.decide(fresh.approval_id, "approve");
              await outcomeOf(fresh.chain_id);
            });
            return turn.then(() => fresh.approval_id);
          }),
        );
      }
    })();

    /** TypeScript client 2.x, modern era: the client's own input_required retries. */
    const modern = (async () => {
      const client = await connect(url, "auto");
      expect(client.getProtocolEra()).toBe("modern");
      const r = await client.callTool({ name: "create_entities", arguments: entity(names.modern) });
      await client.close();
      return r;
    })();
    /** TypeScript client 2.x, legacy era: times out at 60 s; called again on a new session. */
    const legacy = (async () => {
      const timeouts: string[] = [];
      for (;;) {
        const client = await connect(url, "legacy");
        expect(client.getProtocolEra()).toBe("legacy");
        try {
          const r = await client.callTool({ name: "create_entities", arguments: entity(names.legacy) });
          return { r, timeouts };
        } catch (err) {
          timeouts.push((err as Error).message);
        } finally {
          await client.close();
        }
      }
    })();
    const py = runTool(python, [
      path.join(here, "python/mcp2_client.py"),
      url.href,
      "create_entities",
      JSON.stringify(entity(names.python)),
    ]);
    /** Inspector CLI (legacy era by default for a URL): run again while it fails (its timeout). */
    const inspector = (async () => {
      const failures: string[] = [];
      const catalog = mkdtempSync(path.join(os.tmpdir(), "tg-inspector-"));
      try {
        for (;;) {
          try {
            return {
              out: await runTool(
                path.join(root, "node_modules/.bin/mcp-inspector"),
                [
                  "--cli",
                  url.href,
                  "--method",
                  "tools/call",
                  "--tool-name",
                  "create_entities",
                  "--tool-args-json",
                  JSON.stringify(entity(names.inspector)),
                  "--format",
                  "json",
                ],
                { HOME: catalog, MCP_CATALOG_PATH: path.join(catalog, "mcp.json") },
              ),
              failures,
            };
          } catch (err) {
            failures.push((err as Error).message);
            if (failures.length > 3) throw err;
          }
        }
      } finally {
        rmSync(catalog, { recursive: true, force: true });
      }
    })();

    const [m, l, p, i] = await Promise.all([modern, legacy, py, inspector]);
    approving = false;
    await approver;
    await Promise.all(approvals);
    expect(approvals).toHaveLength(4); // one approval per call: every retry re-attached

    expect(m.isError).toBeFalsy();
    expect(JSON.stringify(m.content)).toContain(names.modern);
    expect(l.r.isError).toBeFalsy();
    expect(JSON.stringify(l.r.content)).toContain(names.legacy);
    expect(l.timeouts.length).toBeGreaterThanOrEqual(1);
    const pyResult = p.result as { isError?: boolean; content: unknown };
    expect(pyResult.isError ?? false).toBe(false);
    expect(JSON.stringify(pyResult.content)).toContain(names.python);
    expect(JSON.stringify(i.out)).toContain(names.inspector);
    expect(JSON.stringify(i.out)).not.toContain("Tollgate refused");
    expect(p.protocol_version).toBe("2026-07-28");
    for (const name of Object.values(names)) expect(await runsOf(name), name).toBe(1);
    // Each call's chain holds it once, with its outcome; the chains are completed, including
    // those of the sessions the legacy clients abandoned (idle expiry).
    for (const result of [m, l.r, pyResult, i.out]) {
      const chainId = /"tollgate\.dev\/chain_id":"([^"]+)"/.exec(JSON.stringify(result))?.[1];
      expect(chainId, JSON.stringify(result)).toBeDefined();
      const stored = await s.storedChain(chainId!);
      expect(stored.events).toHaveLength(1);
      expect(stored.events[0]).toMatchObject({ outcome: { status: "success" } });
      await waitForReceipt(s, chainId!, 20_000);
    }
  }, 400_000);
});

/** Runs a client process; resolves with the last line of stdout as JSON. */
function runTool(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      { timeout: 300_000, env: { ...process.env, PYTHONWARNINGS: "ignore", ...env } },
      (err, stdout, stderr) => {
        if (err)
          return reject(new Error(`${path.basename(cmd)} failed: ${err.message}\n${stdout}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>);
        } catch {
          try {
            resolve(JSON.parse(stdout) as Record<string, unknown>);
          } catch {
            reject(new Error(`${path.basename(cmd)} printed no JSON:\n${stdout}\n${stderr}`));
          }
        }
      },
    );
  });
}
