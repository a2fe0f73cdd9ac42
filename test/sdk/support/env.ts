/**
 * Test environment of the SDK suites: the real service over real HTTP (startTestService with
 * listen: true), an organization with client and admin keys, and a virtual ticker that stands
 * in for the poll loop's sleep and clock (the HTTP stays real).
 */
import { type ChainDetail, ChainDetailSchema } from "../../../src/contract/v1/chains.js";
import {
  type ChainConfig,
  createConfig,
  type InitOptions,
  type SdkInternals,
} from "../../../src/sdk/index.js";
import { startTestService, type TestService } from "../../support/service.js";

/** An injected sleep/clock pair: each sleep records its duration and advances virtual time. */
export interface Ticker {
  /** Every duration (ms) the poll loop asked to sleep, in order. */
  sleeps: number[];
  /** Virtual epoch ms. */
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Called after the n-th sleep (1-based), before the poll that follows it. */
  onTick: (n: number) => unknown;
}

export function makeTicker(): Ticker {
  let virtual = 0;
  const t: Ticker = {
    sleeps: [],
    now: () => virtual,
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason;
      t.sleeps.push(ms);
      virtual += ms;
      await new Promise((r) => setImmediate(r));
      await t.onTick(t.sleeps.length);
      if (signal?.aborted) throw signal.reason;
    },
    onTick: () => undefined,
  };
  return t;
}

export interface SdkEnv {
  t: TestService;
  org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  /** A config against the real service; `internals` default to a fresh ticker's. */
  config(options?: InitOptions, internals?: Partial<SdkInternals>): ChainConfig;
  /** Decides an approval with the organization's admin API key. */
  decide(approvalId: string, body: Record<string, unknown>): Promise<void>;
  /** GET /v1/chains/{id} with the client key (what the service stored). */
  stored(chainId: string): Promise<ChainDetail>;
  close(): Promise<void>;
}

/** Starts the real service listening on loopback and bootstraps organization `slug`. */
export async function startSdkEnv(slug: string, orgSpec: Record<string, unknown> = {}): Promise<SdkEnv> {
  const t = await startTestService({ listen: true });
  const org = await t.bootstrapOrg(slug, orgSpec);
  return {
    t,
    org,
    config(options = {}, internals) {
      const ticker = makeTicker();
      return createConfig(org.clientKey, { backendUrl: t.url, ...options }, internals ?? ticker);
    },
    async decide(approvalId, body) {
      const r = await t.call("POST", `/v1/approvals/${approvalId}/decision`, { token: org.adminKey, body });
      if (r.statusCode !== 200) throw new Error(`decision failed: ${r.statusCode} ${r.body}`);
    },
    async stored(chainId) {
      const r = await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey });
      if (r.statusCode !== 200) throw new Error(`get chain failed: ${r.statusCode} ${r.body}`);
      return ChainDetailSchema.parse(r.json());
    },
    close: () => t.close(),
  };
}
