/**
 * No input yields a 5xx (issue: fail closed on every input): schemathesis (PyPI, installed by
 * scripts/schemathesis-env.sh) generates valid and hostile requests from GET /openapi.json and
 * sends them to the real service process on real PostgreSQL, with valid credentials and real
 * ids of chains, events, approvals, receipts and tokens. Bounded in time. Afterwards the
 * database must hold no half-write: counters match rows, sequences are contiguous, every sealed
 * chain has exactly one receipt, every approval its event.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, type PostgresCluster, startPostgres } from "../support/postgres.js";

const root = path.resolve(import.meta.dirname, "../..");
/** Fuzzing budget per run, in seconds (two runs: organization routes, service admin routes). */
const ORG_SECONDS = 75;
const ADMIN_SECONDS = 30;

describe("schemathesis against the real service", () => {
  let pgc: PostgresCluster;
  let proc: ChildProcess;
  let dir: string;
  let base: string;
  let logs = "";
  const adminToken = `tga_${"f".repeat(20)}${Date.now()}`;
  let orgAdminKey = "";
  const ids: Record<string, string[]> = { chains: [], events: [], approvals: [], receipts: [], tokens: [] };
  let schemathesis = "";

  const api = async (method: string, url: string, token: string, body?: unknown) => {
    const r = await fetch(`${base}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await r.json();
    if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };

  beforeAll(async () => {
    // Fails (never skips) when the tool cannot be installed.
    schemathesis = execFileSync("bash", [path.join(root, "scripts/schemathesis-env.sh")], {
      encoding: "utf8",
    })
      .trim()
      .split("\n")
      .at(-1)!;
    pgc = await startPostgres();
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-schemathesis-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    proc = spawn(process.execPath, ["--import", "tsx", "src/service/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        DATABASE_URL: pgc.url,
        TOLLGATE_ADMIN_TOKEN: adminToken,
        TOLLGATE_DATA_DIR: path.join(dir, "data"),
        LOG_LEVEL: "error",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc.stdout!.on("data", (d) => (logs += d));
    proc.stderr!.on("data", (d) => (logs += d));
    for (const deadline = Date.now() + 60_000; ; ) {
      if (
        await fetch(`${base}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`service did not become ready:\n${logs}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const slug of ["fuzz", "fuzz-admin"])
      await api("PUT", `/v1/admin/organizations/${slug}`, adminToken, {});
    orgAdminKey = (
      await api("POST", "/v1/admin/organizations/fuzz/api-keys", adminToken, { name: "fuzz", role: "admin" })
    ).api_key;
    // Real ids for the path parameters: chains with events, a pending and a decided approval,
    // receipts and a public token.
    for (let i = 0; i < 4; i++) {
      const chain = await api("POST", "/v1/chains", orgAdminKey, { name: `fuzz-${i}`, metadata: { i } });
      ids.chains!.push(chain.chain_id);
      const read = await api("POST", `/v1/chains/${chain.chain_id}/actions`, orgAdminKey, {
        agent_name: "reader",
        action_type: "tool_call",
        action_name: "read_file",
        payload: { path: `/tmp/${i}` },
      });
      ids.events!.push(read.event_id);
      if (i < 2) {
        const pay = await api("POST", `/v1/chains/${chain.chain_id}/actions`, orgAdminKey, {
          agent_name: "payer",
          action_type: "tool_call",
          action_name: "pay",
          payload: { amount_usd: 9000 },
        });
        ids.approvals!.push(pay.approval_id);
      }
      if (i === 0)
        await api("POST", `/v1/approvals/${ids.approvals![0]}/decision`, orgAdminKey, {
          decision: "approve",
        });
      if (i >= 2)
        ids.receipts!.push(
          (await api("POST", `/v1/chains/${chain.chain_id}/complete`, orgAdminKey, {})).receipt_id,
        );
    }
    ids.tokens!.push(
      (
        await api("POST", "/v1/public-verification-tokens", orgAdminKey, {
          artifact_type: "receipt",
          artifact_id: ids.receipts![0],
        })
      ).token_id,
    );
  }, 180_000);

  afterAll(async () => {
    if (proc && proc.exitCode === null) proc.kill("SIGKILL");
    await pgc?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Test cases a run reports as generated: N of its summary line "Test cases: N generated, …";
   * 0 for "No test cases were generated" or a summary without the line (a run that tested
   * nothing proves nothing, so each run must report more than 0).
   */
  const generatedCases = (output: string): number => {
    const m = /Test cases:\s+(\d+) generated/.exec(output);
    return m ? Number(m[1]) : 0;
  };

  /** Runs schemathesis with a config binding real ids; returns its exit code and output. */
  const fuzz = (
    name: string,
    token: string,
    seconds: number,
    filter: string[],
    extra: Record<string, string[]> = {},
  ) => {
    const dictionaries = { ...ids, ...extra };
    const toml = [
      "[parameters]",
      ...Object.keys(dictionaries).map(
        (d) => `"path.${PARAMS[d]}" = { dictionary = "${d}", probability = 0.7 }`,
      ),
      ...Object.entries(dictionaries).flatMap(([d, values]) => [
        `[dictionaries.${d}]`,
        `values = ${JSON.stringify(values)}`,
      ]),
    ].join("\n");
    const config = path.join(dir, `${name}.toml`);
    writeFileSync(config, toml);
    return new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(
        schemathesis,
        [
          "--config-file",
          config,
          "run",
          `${base}/openapi.json`,
          "-H",
          `Authorization: Bearer ${token}`,
          "--checks",
          "not_a_server_error",
          "--max-time",
          String(seconds),
          "--workers",
          "1",
          "--generation-database",
          "none",
          "--no-color",
          "--output-sanitize",
          "true",
          ...filter,
        ],
        // Its working files (.schemathesis/) go to the test's temporary directory.
        { cwd: dir, stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      child.on("close", (code) => {
        // The run's summary in the test log: operations, phases, cases generated.
        console.log(`schemathesis ${name}:\n${output.slice(output.lastIndexOf("SUMMARY"))}`);
        resolve({ code, output });
      });
    });
  };

  it(
    "organization routes (/v1, /public, .well-known): 0 server errors",
    async () => {
      const r = await fuzz("org", orgAdminKey, ORG_SECONDS, ["--exclude-path-regex", "^/v1/admin"]);
      expect(generatedCases(r.output), r.output.slice(-6000)).toBeGreaterThan(0);
      expect(r.output, r.output.slice(-6000)).not.toMatch(/Server error/i);
      expect(r.code, r.output.slice(-6000)).toBe(0);
    },
    ORG_SECONDS * 1000 + 120_000,
  );

  it(
    "service admin routes (/v1/admin): 0 server errors",
    async () => {
      const r = await fuzz("admin", adminToken, ADMIN_SECONDS, ["--include-path-regex", "^/v1/admin"], {
        slugs: ["fuzz-admin"],
      });
      expect(generatedCases(r.output), r.output.slice(-6000)).toBeGreaterThan(0);
      expect(r.output, r.output.slice(-6000)).not.toMatch(/Server error/i);
      expect(r.code, r.output.slice(-6000)).toBe(0);
    },
    ADMIN_SECONDS * 1000 + 120_000,
  );

  it("left no half-write behind", async () => {
    const c = new pg.Client({ connectionString: pgc.url });
    await c.connect();
    try {
      const one = async (sql: string) => Number((await c.query(sql)).rows[0]!.n);
      // Counters match rows; sequences are 1..n.
      expect(
        await one(
          "SELECT count(*)::int AS n FROM chains c WHERE c.event_count <> (SELECT count(*) FROM chain_events e WHERE e.chain_id = c.id)",
        ),
      ).toBe(0);
      expect(
        await one(
          "SELECT count(*)::int AS n FROM (SELECT chain_id FROM chain_events GROUP BY chain_id HAVING min(sequence) <> 1 OR max(sequence) <> count(*)) s",
        ),
      ).toBe(0);
      // A sealed chain has exactly one receipt; an unsealed one none.
      expect(
        await one(
          "SELECT count(*)::int AS n FROM chains c WHERE (c.status IN ('completed','failed')) <> (c.receipt_id IS NOT NULL) OR (c.receipt_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.id = c.receipt_id))",
        ),
      ).toBe(0);
      // Receipt numbering per organization is contiguous and matches the counter.
      expect(
        await one(
          "SELECT count(*)::int AS n FROM organizations o WHERE o.receipt_seq <> (SELECT count(*) FROM receipts r WHERE r.org_id = o.id) OR o.receipt_seq <> COALESCE((SELECT max(sequence) FROM receipts r WHERE r.org_id = o.id), 0)",
        ),
      ).toBe(0);
      // Every approval has its event.
      expect(
        await one(
          "SELECT count(*)::int AS n FROM approvals a WHERE NOT EXISTS (SELECT 1 FROM chain_events e WHERE e.id = a.event_id AND e.approval_id = a.id)",
        ),
      ).toBe(0);
      // The fuzzed organization still exists and the service still answers.
      expect(await one("SELECT count(*)::int AS n FROM organizations WHERE slug = 'fuzz'")).toBe(1);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      await c.end();
    }
  });
});

/** Dictionary name → the path parameter it fills. */
const PARAMS: Record<string, string> = {
  chains: "chain_id",
  events: "event_id",
  approvals: "approval_id",
  receipts: "receipt_id",
  tokens: "token_id",
  slugs: "slug",
};
