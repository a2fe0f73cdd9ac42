/**
 * The fixture of the outcome-reporting tests (test/service/outcomes*.test.ts): a service with
 * two organizations, the first with a custom deny rule for action `drop_table`, and helpers to
 * open a chain and record an action in it as the first organization's client.
 */
import { afterAll, beforeAll, expect } from "vitest";
import { startTestService, type TestService } from "./service.js";

type Org = Awaited<ReturnType<TestService["bootstrapOrg"]>>;

/** What {@link useOutcomeFixture} provides; the fields are set once the file's beforeAll ran. */
export interface OutcomeFixture {
  t: TestService;
  /** Organization `slug`, with the deny rule "no-drop". */
  org: Org;
  /** Organization `${slug}-other`. */
  other: Org;
  /** Opens a chain as org's client; returns its id. */
  openChain(): Promise<string>;
  /** Records a tool_call by agent "worker" (expects 200); returns the decision. */
  record(
    chainId: string,
    actionName: string,
    payload?: Record<string, unknown>,
  ): Promise<{ event_id: string; policy_decision: string; approval_id: string | null }>;
}

/** Starts the fixture in beforeAll and closes it in afterAll of the calling file or describe. */
export function useOutcomeFixture(slug: string, opts: { listen?: boolean } = {}): OutcomeFixture {
  const f = {
    async openChain() {
      const c = await f.t.call("POST", "/v1/chains", { token: f.org.clientKey, body: { name: slug } });
      expect(c.statusCode, c.body).toBe(201);
      return c.json().chain_id as string;
    },
    async record(chainId: string, actionName: string, payload: Record<string, unknown> = {}) {
      const r = await f.t.call("POST", `/v1/chains/${chainId}/actions`, {
        token: f.org.clientKey,
        body: { agent_name: "worker", action_type: "tool_call", action_name: actionName, payload },
      });
      expect(r.statusCode, r.body).toBe(200);
      return r.json();
    },
  } as OutcomeFixture;
  beforeAll(async () => {
    f.t = await startTestService(opts);
    f.org = await f.t.bootstrapOrg(slug);
    f.other = await f.t.bootstrapOrg(`${slug}-other`);
    const p = await f.t.call("PUT", `/v1/admin/organizations/${slug}/policies/rules`, {
      token: f.t.adminToken,
      body: {
        config: {
          custom_rules: [
            { name: "no-drop", match: { action_name: "drop_table" }, outcome: "deny", reason: "never" },
          ],
        },
      },
    });
    expect(p.statusCode, p.body).toBeLessThan(300);
  });
  afterAll(async () => f.t?.close());
  return f;
}
