/**
 * Outcome reports leave the sidecar in batches (POST /v1/outcomes), seen on the wire through a
 * real TCP proxy in front of the service: concurrent calls on several chains share requests,
 * every outcome is bound before its chain completes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, readApiKey } from "../../sidecar/config.js";
import { type Sidecar, startSidecar } from "../../sidecar/sidecar.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { startProxy, type TcpProxy } from "../sdk/support/proxy.js";
import { type Stack, startStack, unary } from "./harness.js";

describe("sidecar outcome reports", () => {
  let s: Stack;
  let proxy: TcpProxy;
  let sidecar: Sidecar;
  let client: ReturnType<typeof createGatewayClient>;

  beforeAll(async () => {
    s = await startStack({ slug: "sidecar-outcomes" });
    proxy = await startProxy(s.t.url);
    const config = parseConfig({ ...s.configInput, serviceUrl: proxy.url });
    sidecar = await startSidecar({
      config,
      apiKey: await readApiKey(config.apiKeyFile),
      defaultMetrics: false,
    });
    client = createGatewayClient(sidecar.grpcAddress);
  });
  afterAll(async () => {
    client?.close();
    await sidecar?.close();
    await proxy?.close();
    await s?.close();
  });

  it("sends the outcomes of concurrent calls together and binds each before completion", async () => {
    const chains = await Promise.all(
      [1, 2, 3].map(
        async () =>
          (await unary<unknown, { chain_id: string }>(client, "OpenChain", { name: "batched" })).chain_id,
      ),
    );
    const calls = 30;
    await Promise.all(
      Array.from({ length: calls }, (_, i) =>
        unary(client, "Invoke", {
          chain_id: chains[i % chains.length],
          agent_name: "worker",
          action_name: "search",
          payload: jsonToStruct({ i }),
          upstream: "tools",
        }),
      ),
    );
    // Completion waits for the chain's reports (flushed at once): the receipt shows every outcome.
    for (const chainId of chains) await unary(client, "CompleteChain", { chain_id: chainId });

    const batches = proxy.requestBodies(/^POST \/v1\/outcomes /) as { outcomes: { event_id: string }[] }[];
    const reported = batches.flatMap((b) => b.outcomes.map((o) => o.event_id));
    expect(reported).toHaveLength(calls);
    expect(batches.length).toBeLessThan(calls);
    expect(proxy.count(/^POST \/v1\/chains\/[^/]+\/events\/[^/]+\/outcome /)).toBe(0);
    for (const chainId of chains) {
      const stored = await s.storedChain(chainId);
      expect(stored.status).toBe("completed");
      expect(stored.events.map((e) => (e.outcome as { status: string } | null)?.status)).toEqual(
        Array(calls / chains.length).fill("success"),
      );
      for (const e of stored.events) expect(reported).toContain(e.event_id);
    }
  });
});
