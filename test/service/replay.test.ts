/**
 * Replay before enforce (issue 28) through the real service and database: 10,000 events are
 * recorded through POST /v1/chains/{id}/actions (some requiring approval, approved or denied
 * through the approvals route), then POST /v1/policies/replay decides them again with a
 * candidate. The expected changes are computed here, independently of the service's replay code:
 * the test keeps each chain's state from what it recorded and what the route answered (checking,
 * for every event, that the engine with the live configuration gives the recorded decision from
 * that state, so the state is the one the live engine saw), and asks the engine for the
 * candidate's decision from the same state. Also: an identical candidate changes nothing, the
 * replay writes nothing, bad bodies are 400 naming the field, non-admins get 403, and
 * `tollgate policy replay` (src/cli/policy-replay.ts) over HTTP reports the same exact changes
 * with its exit codes.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Io, main } from "../../src/cli/main.js";
import { type ReplayRequest, ReplayRequestSchema } from "../../src/contract/v1/replay.js";
import { type EvaluationInput, evaluate } from "../../src/policy/engine.js";
import { mergePolicyConfig } from "../../src/policy/merge.js";
import { type ChainActionSummary, type PolicyConfig, PolicyConfigSchema } from "../../src/policy/schema.js";
import { replayPolicy } from "../../src/service/replay/replay-policy.js";
import { ReplayWorkers } from "../../src/service/replay/workers.js";
import { startTestService, type TestService } from "../support/service.js";

const CHAINS = 400;
const EVENTS_PER_CHAIN = 25;
const PARALLEL = 16;

/** The organization's policy while recording. */
const BASE = {
  financial_approval_threshold_usd: 5000,
  cumulative_financial_threshold_usd: 100_000,
  first_external_communication_requires_approval: false,
  pii_to_external_requires_approval: false,
  custom_rules: [
    {
      name: "very-high-level",
      match: { action_name: "lookup" },
      expression: "action.payload.level > 8.0",
      outcome: "deny",
      reason: "level above 8",
    },
  ],
};

/** The candidate: lower thresholds, a stricter level, chain history and org.environment in CEL. */
const CANDIDATE = {
  ...BASE,
  cumulative_financial_threshold_usd: 2500,
  custom_rules: [
    {
      name: "high-level",
      expression: "action.payload.level > 6.0",
      outcome: "deny",
      reason: "level above 6",
    },
    {
      name: "email-after-customer-read",
      expression: 'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"',
      outcome: "require_approval",
      reason: "mail after reading a customer",
    },
    {
      name: "prod-level-three",
      expression: 'org.environment == "production" && action.name == "lookup" && action.payload.level == 3.0',
      outcome: "allow_with_flag",
      reason: "flag level 3 in production",
    },
  ],
};

const effective = (patch: unknown): PolicyConfig =>
  mergePolicyConfig(PolicyConfigSchema.parse({}), patch as never, { evaluation_mode: "enforce" });

/** A deterministic pseudo-random action for event `i` of chain `c`. */
function actionOf(c: number, i: number) {
  const r = (c * 7919 + i * 104_729) % 1000;
  const kind = r % 5;
  if (kind === 0) {
    // One big payment in ~1 of 25 chains requires approval (live threshold 5000).
    const amount = i === 12 && c % 25 === 3 ? 6000 : 50 + (r % 9) * 100;
    return {
      agent_name: `agent-${c % 3}`,
      action_type: "financial",
      action_name: "pay",
      payload: { amount_usd: amount },
    };
  }
  if (kind === 1)
    return {
      agent_name: "agent-0",
      action_type: "tool_call",
      action_name: "read_customer",
      payload: { id: r },
    };
  if (kind === 2) {
    return {
      agent_name: "mailer",
      action_type: "tool_call",
      action_name: "send_email",
      payload: { to: `x${r % 7}@example.com`, destination: "https://mail.example.com" },
    };
  }
  return {
    agent_name: `agent-${c % 2}`,
    action_type: "tool_call",
    action_name: "lookup",
    payload: { level: r % 10 },
  };
}

/** What the test remembers of a chain: its state before the next event, kept by hand. */
interface Kept {
  id: string;
  startedAtMs: number;
  eventCount: number;
  tokens: number;
  exposure: number;
  extAgents: string[];
  actions: ChainActionSummary[];
}

describe("POST /v1/policies/replay", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  /** Expected replay of CANDIDATE over events recorded at or after windowFrom, in chain id and sequence order. */
  const expected: { chainId: string; sequence: number; eventId: string; kind: string | null }[] = [];
  let windowFrom = 0;
  let windowTo = 0;
  let recorded = 0;
  let approvals = 0;
  let recordMs = 0;

  const post = (path: string, token: string, body: unknown) => t.call("POST", path, { token, body });
  const replay = (body: Record<string, unknown>, token = org.adminKey) =>
    post("/v1/policies/replay", token, {
      from: new Date(windowFrom).toISOString(),
      to: new Date(windowTo).toISOString(),
      ...body,
    });
  /** replayPolicy called directly with CANDIDATE replacing "base" over the window, `over` on top. */
  const replayDirect = (
    over: Partial<ReplayRequest>,
    opts: { pageChains?: number; workers?: ReplayWorkers } = {},
  ) =>
    replayPolicy(t.service.ctx.db, {
      orgId: org.orgId,
      body: ReplayRequestSchema.parse({
        candidate: CANDIDATE,
        replace: "base",
        from: new Date(windowFrom).toISOString(),
        to: new Date(windowTo).toISOString(),
        ...over,
      }),
      ...opts,
    });

  beforeAll(async () => {
    t = await startTestService({ listen: true });
    org = await t.bootstrapOrg("replay");
    const put = await t.call("PUT", "/v1/admin/organizations/replay/policies/base", {
      token: t.adminToken,
      body: { config: BASE },
    });
    expect(put.statusCode, put.body).toBe(200);
    const live = effective(BASE);
    const candidate = effective(CANDIDATE);

    const kept: Kept[] = [];
    for (let c = 0; c < CHAINS; c++) {
      const r = await post("/v1/chains", org.clientKey, { name: `c${c}` });
      expect(r.statusCode, r.body).toBe(201);
      kept.push({
        id: r.json().chain_id,
        startedAtMs: t.clock.nowMs(),
        eventCount: 0,
        tokens: 0,
        exposure: 0,
        extAgents: [],
        actions: [],
      });
    }
    const byChain = new Map<string, { sequence: number; eventId: string; kind: string | null }[]>();
    const started = performance.now();
    for (let i = 0; i < EVENTS_PER_CHAIN; i++) {
      t.clock.advance(1000);
      if (i === 5) windowFrom = t.clock.nowMs(); // events 1..5 of each chain: history only
      for (let c0 = 0; c0 < CHAINS; c0 += PARALLEL) {
        await Promise.all(
          kept.slice(c0, c0 + PARALLEL).map(async (k, j) => {
            const c = c0 + j;
            const action = actionOf(c, i);
            const chain: EvaluationInput["chain"] = {
              started_at_ms: k.startedAtMs,
              event_count: k.eventCount,
              total_tokens: k.tokens,
              financial_exposure_usd: k.exposure,
              agents_with_external_communication: [...k.extAgents],
              actions_so_far: [...k.actions],
            };
            const input = {
              config: live,
              org: {
                kill_switch: { active: false, reason: null },
                pause: { active: false, reason: null },
                environment: "production",
              },
              chain,
              action,
              exceptions: [],
              nowMs: t.clock.nowMs(),
              identity: null,
            };
            const mine = evaluate(input);
            const res = await post(`/v1/chains/${k.id}/actions`, org.clientKey, action);
            expect(res.statusCode, res.body).toBe(200);
            const got = res.json();
            // The state kept here is the one the live engine decided on.
            expect(got.policy_decision).toBe(mine.decision.policy_decision);
            recorded++;
            let final = got.policy_decision as string;
            if (got.policy_decision === "require_approval") {
              approvals++;
              const decision = approvals % 2 ? "approve" : "deny";
              const d = await post(`/v1/approvals/${got.approval_id}/decision`, org.adminKey, { decision });
              expect(d.statusCode, d.body).toBe(200);
              final = decision === "approve" ? "allow" : "deny";
            }
            if (input.nowMs >= windowFrom && windowFrom > 0) {
              const after = evaluate({ ...input, config: candidate }).decision.policy_decision;
              const before = got.policy_decision as string;
              const list = byChain.get(k.id) ?? [];
              list.push({
                sequence: got.sequence,
                eventId: got.event_id,
                kind: before === after ? null : `${before}→${after}`,
              });
              byChain.set(k.id, list);
            }
            // Advance the kept state as the spec says: tokens always; metrics when allowed (or approved).
            const allowed = final === "allow" || final === "allow_with_flag";
            k.eventCount++;
            k.tokens += mine.metrics_delta.tokens;
            if (allowed) {
              k.exposure += mine.metrics_delta.financial_exposure_usd;
              if (
                mine.metrics_delta.external_communications > 0 &&
                !k.extAgents.includes(action.agent_name)
              ) {
                k.extAgents.push(action.agent_name);
              }
            }
            k.actions.push({
              name: action.action_name,
              type: action.action_type,
              agent_name: action.agent_name,
            });
          }),
        );
      }
    }
    recordMs = performance.now() - started;
    windowTo = t.clock.nowMs() + 1;
    for (const id of [...byChain.keys()].sort()) {
      for (const e of byChain.get(id)!) expected.push({ chainId: id, ...e });
    }
    // Events after the window are not replayed.
    t.clock.advance(60_000);
    const late = await post(`/v1/chains/${kept[0]!.id}/actions`, org.clientKey, actionOf(0, 99));
    expect(late.statusCode, late.body).toBe(200);
  }, 600_000);
  afterAll(async () => t?.close());

  it("recorded 10,000 events through the route, some approved or denied by a reviewer", () => {
    console.log(`recorded ${recorded} events (${approvals} approvals) in ${Math.round(recordMs)} ms`);
    expect(recorded).toBe(CHAINS * EVENTS_PER_CHAIN);
    expect(approvals).toBeGreaterThan(5);
    expect(approvals).toBeLessThan(100);
  });

  it("reports exactly the changes a direct re-evaluation finds, and writes nothing", async () => {
    const db = t.service.ctx.db;
    const fingerprint = async () => {
      const tables = [
        "chains",
        "chain_events",
        "approvals",
        "exceptions",
        "receipts",
        "jobs",
        "policies",
        "organizations",
      ];
      const out: Record<string, unknown> = {};
      for (const table of tables) {
        const { rows } = await db.query(
          `SELECT count(*)::int AS n, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM ${table} x`,
        );
        out[table] = rows[0];
      }
      return out;
    };
    const before = await fingerprint();
    const r = await replay({ candidate: CANDIDATE, replace: "base", sample_size: 100 });
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    expect(await fingerprint()).toEqual(before);

    const changes: Record<string, number> = {};
    for (const e of expected) if (e.kind) changes[e.kind] = (changes[e.kind] ?? 0) + 1;
    const changed = expected.filter((e) => e.kind);
    console.log(`replay: ${JSON.stringify({ ...body, sample: body.sample.length })}`);
    expect(body.events_replayed).toBe(expected.length);
    expect(body.events_replayed).toBe(CHAINS * (EVENTS_PER_CHAIN - 5));
    expect(body.events_read).toBe(CHAINS * EVENTS_PER_CHAIN);
    expect(body.chains_read).toBe(CHAINS);
    expect(body.changes).toEqual(changes);
    expect(body.changed).toBe(changed.length);
    // The candidate changes several kinds of decision, so the comparison means something.
    expect(Object.keys(changes).length).toBeGreaterThanOrEqual(4);
    expect(changes["allow→allow_with_flag"]).toBeGreaterThan(0); // org.environment read
    expect(body.sample.map((s: { event_id: string }) => s.event_id)).toEqual(
      changed.slice(0, 100).map((e) => e.eventId),
    );
    expect(body.sample[0]).toMatchObject({ chain_id: changed[0]!.chainId, sequence: changed[0]!.sequence });
    expect(body.truncated).toBe(false);
    expect(body.truncated_by).toBeNull();
    expect(body.candidate_name).toBe("base");
  });

  it("a candidate identical to the current policy reports no change", async () => {
    const r = await replay({ candidate: BASE, replace: "base" });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ changed: 0, changes: {}, sample: [], events_replayed: expected.length });
  });

  it("an added candidate combines with the current policies; max_events truncates", async () => {
    const add = await replay({
      candidate: {
        custom_rules: [
          { name: "no-mail", match: { action_name: "send_email" }, outcome: "deny", reason: "no" },
        ],
      },
      name: "zz-extra",
      max_events: 1000,
      sample_size: 0,
    });
    expect(add.statusCode, add.body).toBe(200);
    const body = add.json();
    expect(body).toMatchObject({
      truncated: true,
      truncated_by: "max_events",
      events_read: 1000,
      sample: [],
    });
    expect(body.changed).toBeGreaterThan(0);
    for (const kind of Object.keys(body.changes)) expect(kind).toMatch(/→deny$/);
  });

  it("refuses bad bodies with 400 naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { candidate: { financial_approval_threshold_usd: -1 } },
        /^body\.candidate\.financial_approval_threshold_usd: /,
      ],
      [
        { candidate: { custom_rules: [{ name: "x", expression: "action.nmae == 1", outcome: "deny" }] } },
        /^body\.candidate\.custom_rules\.0\.expression: /,
      ],
      [{ candidate: {}, to: new Date(windowFrom - 1000).toISOString() }, /^body\.to: must be after from/],
      [
        { candidate: {}, to: new Date(windowFrom + 32 * 86_400_000).toISOString() },
        /^body\.to: the window may span at most 31 days/,
      ],
      [{ candidate: {}, from: "yesterday" }, /^body\.from: /],
      [{ candidate: {}, max_events: 200_001 }, /^body\.max_events: /],
      [{ candidate: {}, sample_size: 101 }, /^body\.sample_size: /],
      [{ candidate: {}, replace: "nope" }, /^body\.replace: the organization has no policy named "nope"/],
      [{ candidate: {}, name: "base" }, /^body\.name: a policy named "base" exists/],
      [{ candidate: {}, extra: 1 }, /extra/],
    ];
    for (const [body, message] of cases) {
      const r = await replay(body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json().code).toBe("TG_ERR_VALIDATION");
      expect(r.json().message, JSON.stringify(body)).toMatch(message);
    }
    const missing = await post("/v1/policies/replay", org.adminKey, { candidate: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().message).toMatch(/^body\.from: /);
  });

  it("the admin route replays the organization named in the path, for the service admin token and that organization's admins", async () => {
    const body = {
      candidate: BASE,
      replace: "base",
      from: new Date(windowFrom).toISOString(),
      to: new Date(windowTo).toISOString(),
    };
    const byOperator = await post("/v1/admin/organizations/replay/policies/replay", t.adminToken, body);
    expect(byOperator.statusCode, byOperator.body).toBe(200);
    expect(byOperator.json()).toMatchObject({ changed: 0, events_replayed: expected.length, replaced: true });
    const byOrgAdmin = await post("/v1/admin/organizations/replay/policies/replay", org.adminKey, body);
    expect(byOrgAdmin.statusCode, byOrgAdmin.body).toBe(200);
    const other = await t.bootstrapOrg("replay-other");
    const elsewhere = await post("/v1/admin/organizations/replay/policies/replay", other.adminKey, body);
    expect(elsewhere.statusCode).toBe(404);
    const client = await post("/v1/admin/organizations/replay/policies/replay", org.clientKey, body);
    expect(client.statusCode).toBe(403);
    const missing = await post("/v1/admin/organizations/nope/policies/replay", t.adminToken, body);
    expect(missing.statusCode).toBe(404);
  });

  it("answers the same, byte for byte, in pages of any size, on one worker thread or several, directly and through the route", async () => {
    const one = new ReplayWorkers(1);
    const three = new ReplayWorkers(3);
    const answer = async (over: Partial<ReplayRequest>, pageChains?: number, workers?: ReplayWorkers) => {
      const a = await replayDirect({ sample_size: 100, ...over }, { pageChains, workers });
      return JSON.stringify({ ...a, duration_ms: 0 });
    };
    try {
      for (const over of [{}, { max_events: 4321 }, { max_events: 25 }]) {
        const whole = await answer(over, 100_000, one);
        expect(JSON.parse(whole).changed).toBeGreaterThan(0);
        expect(await answer(over)).toBe(whole);
        expect(await answer(over, 37, three)).toBe(whole);
        expect(await answer(over, 1, three)).toBe(whole);
        expect(await answer(over, 37, one)).toBe(whole);
      }
      const routed = await replay({ candidate: CANDIDATE, replace: "base", sample_size: 100 });
      expect(JSON.stringify({ ...routed.json(), duration_ms: 0 })).toBe(await answer({}));
    } finally {
      await Promise.all([one.close(), three.close()]);
    }
  });

  it("a replay fails when one of its pages fails (the route answers 500), and stops reading", async () => {
    /** Fails its second page, as a worker that dies on it would. */
    class FailingSecondPage extends ReplayWorkers {
      pages = 0;
      override decide(...args: Parameters<ReplayWorkers["decide"]>) {
        if (++this.pages === 2) return Promise.reject(new Error("replay worker: exited (code 1)"));
        return super.decide(...args);
      }
    }
    const workers = new FailingSecondPage(1);
    try {
      const failing = replayDirect({}, { pageChains: 1, workers });
      await expect(failing).rejects.toThrow("replay worker: exited (code 1)");
      // 400 one-chain pages; it stopped soon after the second.
      expect(workers.pages).toBeLessThan(10);
    } finally {
      await workers.close();
    }
  });

  it("a page fails when its worker fails on it or exits; a later page starts a new worker", async () => {
    const workers = new ReplayWorkers(1);
    const options = {
      config: PolicyConfigSchema.parse(BASE),
      orgEnvironment: "staging",
      exceptions: [],
      fromMs: 0,
      toMs: 1,
      sampleSize: 1,
    };
    try {
      // A page that is not JSON: that page fails, the worker lives on.
      await expect(workers.decide(options, "[", 1)).rejects.toThrow(/^replay worker: /);
      expect(await workers.decide(options, "[]", 0)).toMatchObject({ events_read: 0, chains_read: 0 });
      // The worker is stopped while it holds a page.
      const held = expect(workers.decide(options, "[]", 0)).rejects.toThrow(/^replay worker: stopped/);
      await workers.close();
      await held;
      expect(await workers.decide(options, "[]", 0)).toMatchObject({ events_read: 0 });
    } finally {
      await workers.close();
    }
  });

  it("is for organization admins: a client key gets 403, no credentials 401", async () => {
    const client = await replay({ candidate: BASE, replace: "base" }, org.clientKey);
    expect(client.statusCode).toBe(403);
    const none = await t.call("POST", "/v1/policies/replay", { body: { candidate: {} } });
    expect(none.statusCode).toBe(401);
  });

  describe("tollgate policy replay (CLI, over HTTP)", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-policy-replay-"));
    const file = (name: string, text: string) => {
      const f = path.join(dir, name);
      writeFileSync(f, text);
      return f;
    };
    const cli = async (
      argv: string[],
      env: Record<string, string> = {},
    ): Promise<{ code: number; out: string; err: string }> => {
      let out = "";
      let err = "";
      const io: Io = {
        stdout: (x) => {
          out += x;
        },
        stderr: (x) => {
          err += x;
        },
        readStdin: async () => "",
        fetch: (...a) => fetch(...a),
        env,
      };
      const code = await main(["policy", "replay", ...argv], io);
      return { code, out, err };
    };
    /** The service and an admin key, as flags. */
    const flags = () => ["--url", t.url, "--api-key", org.adminKey];
    const windowArgs = () => [
      "--from",
      new Date(windowFrom).toISOString(),
      "--to",
      new Date(windowTo).toISOString(),
    ];

    it("reports exactly the changes a direct re-evaluation finds; exit 1 when decisions change", async () => {
      const candidate = file("candidate.json", JSON.stringify({ config: CANDIDATE }));
      const changes: Record<string, number> = {};
      for (const e of expected) if (e.kind) changes[e.kind] = (changes[e.kind] ?? 0) + 1;
      const changed = expected.filter((e) => e.kind).length;

      // URL and key from the environment; --json prints the service's answer.
      const json = await cli([candidate, "--replace", "base", "--json", ...windowArgs()], {
        TOLLGATE_URL: t.url,
        TOLLGATE_API_KEY: org.adminKey,
      });
      expect(json.err).toBe("");
      expect(json.code).toBe(1);
      const answer = JSON.parse(json.out);
      expect(answer.changes).toEqual(changes);
      expect(answer).toMatchObject({ changed, events_replayed: expected.length, truncated: false });

      // The same from flags, as text for a CI log: counts, each kind with its count, a sample.
      const text = await cli([candidate, ...flags(), "--replace", "base", "--sample", "3", ...windowArgs()]);
      expect(text.code).toBe(1);
      expect(text.out).toContain(`events read ${CHAINS * EVENTS_PER_CHAIN}, replayed ${expected.length}`);
      for (const [kind, n] of Object.entries(changes)) {
        expect(text.out).toMatch(new RegExp(`${kind.replace("→", " -> ")}\\s+${n}\n`));
      }
      expect(text.out).toContain(`sample (3 of ${changed})`);
      expect(text.out.trimEnd().endsWith(`CHANGES: ${changed}`)).toBe(true);
    });

    it("exit 0 when nothing changes; a GovernancePolicy file is read as the operator maps it", async () => {
      const same = file("same.json", JSON.stringify({ config: BASE }));
      const r = await cli([same, ...flags(), "--replace", "base", ...windowArgs()]);
      expect(r.err).toBe("");
      expect(r.code).toBe(0);
      expect(r.out).toContain("no decision changes");
      expect(r.out.trimEnd().endsWith("NO CHANGES")).toBe(true);

      // A GovernancePolicy adding one rule: the CLI's answer is the route's for the mapped body.
      const resource = file(
        "policy.yaml",
        [
          "apiVersion: tollgate.dev/v1alpha1",
          "kind: GovernancePolicy",
          "metadata: { name: no-mail, namespace: agents }",
          "spec:",
          "  organizationRef: { name: replay }",
          "  customRules:",
          "    - name: no-mail-after-read",
          "      match: { actionName: send_email }",
          '      expression: chain.actions.exists(a, a.name == "read_customer")',
          "      outcome: deny",
          "      reason: no mail after a customer read",
          "",
        ].join("\n"),
      );
      const viaCli = await cli([
        resource,
        "--url",
        t.url,
        "--api-key",
        org.adminKey,
        "--json",
        ...windowArgs(),
      ]);
      expect(viaCli.err).toBe("");
      const direct = await replay({
        candidate: {
          custom_rules: [
            {
              name: "no-mail-after-read",
              match: { action_name: "send_email" },
              expression: 'chain.actions.exists(a, a.name == "read_customer")',
              outcome: "deny",
              reason: "no mail after a customer read",
            },
          ],
        },
      });
      expect(direct.statusCode, direct.body).toBe(200);
      const { duration_ms: _a, ...cliAnswer } = JSON.parse(viaCli.out);
      const { duration_ms: _b, ...routeAnswer } = direct.json();
      expect(cliAnswer).toEqual(routeAnswer);
      expect(cliAnswer.changed).toBeGreaterThan(0);
      expect(viaCli.code).toBe(1);
    });

    it("exit 2 on a bad file, a refused request or an unreachable service; --help exits 0", async () => {
      const good = file("good.json", JSON.stringify({ config: BASE }));
      const bad = file("bad.json", JSON.stringify({ config: { financial_approval_threshold_usd: "lots" } }));
      const auth = flags();
      const badFile = await cli([bad, ...auth]);
      expect(badFile.code).toBe(2);
      expect(badFile.err).toMatch(/bad\.json: .*financial_approval_threshold_usd/);
      const missing = await cli([path.join(dir, "nope.yaml"), ...auth]);
      expect(missing.code).toBe(2);
      expect(missing.err).toMatch(/nope\.yaml: ENOENT/);
      const client = await cli([good, "--url", t.url, "--api-key", org.clientKey]);
      expect(client.code).toBe(2);
      expect(client.err).toMatch(/HTTP 403/);
      const unknownPolicy = await cli([good, ...auth, "--replace", "no-such-policy"]);
      expect(unknownPolicy.code).toBe(2);
      expect(unknownPolicy.err).toMatch(/HTTP 400: .*body\.replace/);
      const noKey = await cli([good, "--url", t.url]);
      expect(noKey.code).toBe(2);
      expect(noKey.err).toMatch(/TOLLGATE_API_KEY/);
      const badWindow = await cli([good, ...auth, "--from", "yesterday"]);
      expect(badWindow.code).toBe(2);
      expect(badWindow.err).toMatch(/--from: not an ISO 8601 instant/);
      // A port nothing listens on: one just given by the system and closed again.
      const port = await new Promise<number>((resolve) => {
        const server = createServer().listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo;
          server.close(() => resolve(port));
        });
      });
      const unreachable = await cli([good, "--url", `http://127.0.0.1:${port}`, "--api-key", org.adminKey]);
      expect(unreachable.code).toBe(2);
      expect(unreachable.err).toContain(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
      const help = await cli(["--help"]);
      expect(help.code).toBe(0);
      expect(help.out).toMatch(/exit 0 no change, 1 changes found, 2 bad input/);
      expect(help.out).toContain("--api-key <key>");
    });
  });
});
