/**
 * Fail modes with the service stopped (spec: init fail_modes / fail_mode, BackendUnavailableError,
 * "no buffering"), and the per-request timeout against a server that never answers.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BackendUnavailableError,
  Chain,
  createConfig,
  DEFAULT_FAIL_MODES,
  ServiceClient,
} from "../../src/sdk/index.js";
import { type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
const chains: Record<string, Chain> = {};
let servedUrl = "";

beforeAll(async () => {
  env = await startSdkEnv("sdk-failmodes");
  servedUrl = env.t.url;
  chains.defaults = await new Chain("fm-defaults", { config: env.config() }).enter();
  chains.legacy = await new Chain("fm-legacy", { config: env.config({ failMode: "deny" }) }).enter();
  chains.custom = await new Chain("fm-custom", {
    config: env.config({ failModes: { financial: "allow", default: "deny", llm_call: "allow" } }),
  }).enter();
  await chains.defaults.recordAgentAction({
    agentName: "reader",
    actionType: "tool_call",
    actionName: "read_file",
  });
  // Stop the service: from here on every request fails to connect.
  await env.t.service.close();
});
afterAll(async () => env?.close());

const isUnavailable = (err: unknown) => err instanceof BackendUnavailableError;

describe("fail modes with the service stopped", () => {
  it("the service defaults deny financial actions with BackendUnavailableError", async () => {
    expect(DEFAULT_FAIL_MODES.financial).toBe("deny");
    const err = await chains
      .defaults!.recordAgentAction({
        agentName: "payer",
        actionType: "tool_call",
        actionName: "pay",
        payload: { amount_usd: 10 },
      })
      .catch((e) => e);
    expect(isUnavailable(err)).toBe(true);
    expect(err.category).toBe("financial");
    expect(err.failModeKey).toBe("financial");
    expect(err.message).toMatch(/cannot reach the governance service/);
    expect(err.message).toMatch(/fail mode deny/);
    const ext = await chains
      .defaults!.recordAgentAction({
        agentName: "mailer",
        actionType: "tool_call",
        actionName: "send_email",
        payload: { to: "someone@outside.example" },
      })
      .catch((e) => e);
    expect(isUnavailable(ext)).toBe(true);
    expect(ext.category).toBe("external_communication");
  });

  it("the service defaults allow other actions, flagged, with event_id null", async () => {
    const d = await chains.defaults!.recordAgentAction({
      agentName: "reader",
      actionType: "tool_call",
      actionName: "read_file",
      payload: {
        path: "/tmp/x",
      },
    });
    expect(d).toMatchObject({
      policy_decision: "allow_with_flag",
      decision_source: "fail_mode",
      event_id: null,
      category: "default",
      policy_name: "fail_modes.default",
    });
    expect(d.decision_reason).toMatch(/Backend unavailable/);
    expect(d.decision_reason).toMatch(/fail mode allow/);
    const llm = await chains.defaults!.recordAgentAction({
      agentName: "writer",
      actionType: "llm_call",
      actionName: "gpt",
      payload: { input_tokens: 10 },
    });
    expect(llm).toMatchObject({ policy_decision: "allow_with_flag", category: "llm_call", event_id: null });
  });

  it("the legacy failMode is fail_modes with only default", async () => {
    const err = await chains
      .legacy!.recordAgentAction({ agentName: "reader", actionType: "tool_call", actionName: "read_file" })
      .catch((e) => e);
    expect(isUnavailable(err)).toBe(true);
    expect(err.category).toBe("default");
    expect(err.failModeKey).toBe("default");
    const llm = await chains
      .legacy!.recordAgentAction({ agentName: "writer", actionType: "llm_call", actionName: "gpt" })
      .catch((e) => e);
    expect(isUnavailable(llm)).toBe(true);
    expect(llm.failModeKey).toBe("default");
  });

  it("failModes apply per category, then their default", async () => {
    const pay = await chains.custom!.recordAgentAction({
      agentName: "payer",
      actionType: "tool_call",
      actionName: "pay",
      payload: { amount_usd: 10 },
    });
    expect(pay).toMatchObject({
      policy_decision: "allow_with_flag",
      category: "financial",
      policy_name: "fail_modes.financial",
    });
    const read = await chains
      .custom!.recordAgentAction({ agentName: "reader", actionType: "tool_call", actionName: "read_file" })
      .catch((e) => e);
    expect(isUnavailable(read)).toBe(true);
    expect(read.failModeKey).toBe("default");
  });

  it("entering a chain and completing one raise BackendUnavailableError; exit can be retried", async () => {
    await expect(new Chain("fm-new", { config: env.config() }).enter()).rejects.toBeInstanceOf(
      BackendUnavailableError,
    );
    await expect(chains.defaults!.exit()).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(chains.defaults!.exit()).rejects.toBeInstanceOf(BackendUnavailableError);
    expect(chains.defaults!.chainId).not.toBeNull();
  });

  it("nothing is buffered: the flagged actions never reach the service", async () => {
    // The database outlives the HTTP server: the chain holds only the action recorded before.
    const { rows } = await env.t.service.ctx.db.query(
      "SELECT action_name FROM chain_events WHERE chain_id = $1 ORDER BY sequence",
      [chains.defaults!.chainId],
    );
    expect(rows.map((r) => r.action_name)).toEqual(["read_file"]);
    expect(servedUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe("per-request timeout", () => {
  let hang: net.Server;
  let url = "";
  const sockets: net.Socket[] = [];
  beforeAll(async () => {
    hang = net.createServer((s) => {
      sockets.push(s); // accepts, reads, never answers
      s.on("error", () => undefined);
    });
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(hang.address() as net.AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => hang.close(r));
  });

  it("a backend that does not answer within backendTimeoutSeconds is unavailable", async () => {
    const config = createConfig("tg_test", { backendUrl: url, backendTimeoutSeconds: 0.2 });
    const err = await new Chain("fm-timeout", { config }).enter().catch((e) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(err.message).toMatch(/no response from the governance service within 0\.2 s/);
    const client = new ServiceClient({ apiKey: "tg_test", backendUrl: url, timeoutMs: 200 });
    await expect(client.approvalStatus("00000000-0000-4000-8000-000000000000")).rejects.toBeInstanceOf(
      BackendUnavailableError,
    );
  });
});
