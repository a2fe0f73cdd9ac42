/**
 * `npm run demo [-- --approve-after SECONDS]`: the whole governed flow on real tools, locally.
 *
 * Starts the governance service on embedded PGlite (temporary folder), a sidecar whose upstreams
 * are real MCP servers over stdio (@modelcontextprotocol/server-filesystem on a temporary folder
 * and @modelcontextprotocol/server-memory), and a scripted agent calling tools through the
 * sidecar's gRPC ToolGateway. Expected, step by step:
 *  1. reads (list_directory, read_text_file, read_graph) and a memory write are allowed;
 *  2. the first external communication (an e-mail to another company) waits for approval;
 *  3. a 7,500 USD payment waits for approval (the dashboard URL is printed; with
 *     --approve-after the demo approves both through the API after that many seconds);
 *  4. deleting 20 memory entities at once is denied by a custom rule and never reaches the tool;
 *  5. the chain completes with a signed receipt;
 *  6. the receipt verifies through /v1/verification/v2 and through a public token link;
 *  7. `tollgate verify` verifies the exported chain offline.
 * Exit code 0 only if every step behaved as expected; 1 otherwise; 2 for usage errors.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { type Agent, createAgent, type Invoked, Refusal } from "./agent.js";
import { type DemoProcess, freePort, ROOT, startTsx, waitHttpReady } from "./stack.js";

const require = createRequire(import.meta.url);
const ORG = "demo-corp";
const APPROVER = "approver@demo-corp.example";

/** Options of one demo run. */
export interface DemoOptions {
  /** Approve pending approvals through the API after this many seconds; undefined waits for a human. */
  approveAfterSeconds?: number;
  /** Service port (0 picks a free one). */
  port: number;
  /** Keep the temporary folder (logs, exported chain). */
  keep: boolean;
}

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code: number, s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
const say = (s: string) => process.stdout.write(`${s}\n`);
const step = (n: number, title: string) => say(`\n${paint(1, `${n}. ${title}`)}`);

/** Expectation bookkeeping: every check prints one line and counts failures. */
class Checks {
  failed = 0;
  passed = 0;
  check(ok: boolean, what: string, detail = ""): boolean {
    if (ok) this.passed++;
    else this.failed++;
    say(`   ${ok ? paint(32, "✔") : paint(31, "✘")} ${what}${detail ? paint(2, `  ${detail}`) : ""}`);
    return ok;
  }
}

async function api(base: string, token: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const toolText = (r: Invoked) =>
  ((r.result as { content?: { type: string; text?: string }[] })?.content ?? [])
    .map((c) => c.text ?? "")
    .join("\n");

/** Runs the demo; resolves with the process exit code. */
export async function runDemo(opts: DemoOptions): Promise<number> {
  const checks = new Checks();
  const dir = mkdtempSync(path.join(os.tmpdir(), "tollgate-demo-"));
  const files = path.join(dir, "workspace");
  const procs: DemoProcess[] = [];
  let agent: Agent | undefined;
  try {
    step(0, "Starting the governance service (embedded PGlite), the sidecar and two MCP servers");
    const port = opts.port || (await freePort());
    const base = `http://127.0.0.1:${port}`;
    const service = startTsx("service", "src/service/main.ts", {
      PORT: String(port),
      HOST: "127.0.0.1",
      TOLLGATE_DATA_DIR: path.join(dir, "service"),
      TOLLGATE_PUBLIC_URL: base,
      TOLLGATE_DEV_OIDC: "true",
      TOLLGATE_DEV_OIDC_USERS: APPROVER,
      LOG_LEVEL: "warn",
    });
    procs.push(service);
    await waitHttpReady(`${base}/readyz`, service);
    const admin = readFileSync(path.join(dir, "service", "admin-token"), "utf8").trim();
    say(`   service   ${base}  (data in ${path.join(dir, "service")})`);

    await api(base, admin, "PUT", `/v1/admin/organizations/${ORG}`, { approval_timeout_hours: 24 });
    await api(base, admin, "PUT", `/v1/admin/organizations/${ORG}/approver-teams/finance`, {
      approvers: [{ email: APPROVER }],
    });
    const key = async (name: string, role: string) =>
      (await api(base, admin, "POST", `/v1/admin/organizations/${ORG}/api-keys`, { name, role }))
        .api_key as string;
    const clientKey = await key("demo-agent", "client");
    const adminKey = await key("demo-reviewer", "admin");
    await api(base, admin, "PUT", `/v1/admin/organizations/${ORG}/policies/rules`, {
      config: {
        custom_rules: [
          {
            name: "no-bulk-memory-deletes",
            match: { action_name: "delete_*", payload: { count: { gte: 10 } } },
            outcome: "deny",
            reason: "Deleting 10 or more memory entities in one call is forbidden",
            remediation: "Delete in batches of fewer than 10 after review",
          },
        ],
      },
    });
    say(
      `   organization ${ORG}: client and admin API keys, approver team, custom rule no-bulk-memory-deletes`,
    );

    writeFileSync(path.join(dir, "api-key"), `${clientKey}\n`, { mode: 0o600 });
    mkdirSync(files);
    writeFileSync(
      path.join(files, "notes.md"),
      "# Q3 research notes\nRevenue grew 12% quarter over quarter.\n",
    );
    writeFileSync(path.join(files, "invoice-INV-7.txt"), "Invoice INV-7: 7,500.00 USD due to Globex Corp.\n");
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const sidecar = startTsx("sidecar", "sidecar/main.ts", {
      TOLLGATE_SERVICE_URL: base,
      TOLLGATE_API_KEY_FILE: path.join(dir, "api-key"),
      TOLLGATE_ORGANIZATION: ORG,
      TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TOLLGATE_UPSTREAMS: JSON.stringify([
        {
          name: "files",
          type: "mcp",
          transport: "stdio",
          command: process.execPath,
          args: [require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js"), files],
        },
        {
          name: "memory",
          type: "mcp",
          transport: "stdio",
          command: process.execPath,
          args: [require.resolve("@modelcontextprotocol/server-memory/dist/index.js")],
          env: { MEMORY_FILE_PATH: path.join(dir, "memory.jsonl") },
        },
      ]),
      LOG_LEVEL: "warn",
    });
    procs.push(sidecar);
    await waitHttpReady(`http://127.0.0.1:${httpPort}/readyz`, sidecar);
    say(
      `   sidecar   gRPC 127.0.0.1:${grpcPort}, upstreams: files (server-filesystem on ${files}), memory (server-memory)`,
    );

    agent = createAgent(`127.0.0.1:${grpcPort}`);
    const chainId = await agent.openChain("demo-research-run", { ticket: "DEMO-1" });
    say(`   chain     ${chainId}`);

    /** Waits for the chain's pending approval and approves it (API) or lets a human decide. */
    const approveWhenPending = async (what: string): Promise<void> => {
      let approvalId: string | undefined;
      for (let i = 0; i < 600 && !approvalId; i++) {
        const { approvals } = await api(base, adminKey, "GET", "/v1/approvals?status=pending");
        approvalId = (approvals as { approval_id: string; chain_id: string }[]).find(
          (a) => a.chain_id === chainId,
        )?.approval_id;
        if (!approvalId) await new Promise((r) => setTimeout(r, 100));
      }
      checks.check(
        Boolean(approvalId),
        `${what}: waiting for approval`,
        approvalId ? `approval ${approvalId}` : "",
      );
      if (!approvalId) return;
      say(`   → review it at ${base}/dashboard/approvals (development sign-in as ${APPROVER})`);
      if (opts.approveAfterSeconds !== undefined) {
        say(`   → --approve-after: approving through the API in ${opts.approveAfterSeconds} s`);
        await new Promise((r) => setTimeout(r, opts.approveAfterSeconds! * 1000));
        const r = await api(base, adminKey, "POST", `/v1/approvals/${approvalId}/decision`, {
          decision: "approve",
          notes: "approved by npm run demo --approve-after",
        });
        checks.check(r.status === "approved", `${what}: approved through the API`);
      } else {
        say("   → waiting for a human decision in the dashboard ...");
      }
    };

    step(1, "Reads are allowed");
    const list = await agent.invoke(chainId, "list_directory", { path: files }, "files");
    checks.check(
      list.decision.policy_decision === "allow" && list.forwarded && /notes\.md/.test(toolText(list)),
      "files.list_directory allowed and forwarded",
      toolText(list).replace(/\n/g, ", "),
    );
    const read = await agent.invoke(
      chainId,
      "read_text_file",
      { path: path.join(files, "notes.md") },
      "files",
    );
    checks.check(
      read.decision.policy_decision === "allow" && /Revenue grew/.test(toolText(read)),
      "files.read_text_file allowed",
      toolText(read).split("\n")[1] ?? "",
    );
    const entities = Array.from({ length: 20 }, (_, i) => ({
      name: `lead-${String(i + 1).padStart(2, "0")}`,
      entityType: "lead",
      observations: [`found in research run DEMO-1 (#${i + 1})`],
    }));
    const created = await agent.invoke(chainId, "create_entities", { entities }, "memory");
    checks.check(
      created.decision.policy_decision === "allow" && created.forwarded && !created.upstreamError,
      "memory.create_entities (20 leads) allowed",
    );
    const graph = await agent.invoke(chainId, "read_graph", {}, "memory");
    checks.check(
      graph.decision.policy_decision === "allow" && (toolText(graph).match(/lead-\d\d/g) ?? []).length >= 20,
      "memory.read_graph allowed, 20 leads stored",
    );

    step(2, "The first external communication waits for approval");
    const mail = agent.invoke(chainId, "send_email", {
      to: "partner@globex.example",
      subject: "Q3 research summary",
      body: "Revenue grew 12% quarter over quarter.",
    });
    await approveWhenPending("send_email to globex.example (first external communication)");
    const mailed = await mail;
    checks.check(
      mailed.decision.policy_decision === "allow" && mailed.decision.decision_source === "human_approval",
      "send_email went ahead after the human approval",
      `decision_source=${mailed.decision.decision_source}`,
    );

    step(3, "A 7,500 USD payment waits for approval");
    const payment = agent.invoke(chainId, "pay_invoice", {
      invoice: "INV-7",
      amount_usd: 7500,
      payee: "Globex Corp",
    });
    await approveWhenPending("pay_invoice 7,500 USD");
    const paid = await payment;
    checks.check(
      paid.decision.policy_decision === "allow" && paid.decision.decision_source === "human_approval",
      "pay_invoice went ahead after the human approval",
      `decision_source=${paid.decision.decision_source}`,
    );

    step(4, "A bulk deletion of 20 items is denied by a custom rule");
    const names = entities.map((e) => e.name);
    try {
      await agent.invoke(chainId, "delete_entities", { entityNames: names, count: names.length }, "memory");
      checks.check(false, "memory.delete_entities (20 leads) denied", "it was allowed");
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      checks.check(
        err.decision?.policy_decision === "deny" && err.decision.policy_name === "no-bulk-memory-deletes",
        "memory.delete_entities (20 leads) denied",
        `${err.decision?.policy_name}: ${err.decision?.decision_reason}`,
      );
    }
    const after = await agent.invoke(chainId, "read_graph", {}, "memory");
    checks.check(
      (toolText(after).match(/lead-\d\d/g) ?? []).length >= 20,
      "the deletion never reached the memory server (20 leads still stored)",
    );

    step(5, "The chain completes with a signed receipt");
    const done = await agent.completeChain(chainId);
    checks.check(done.status === "completed", `chain completed`, `receipt ${done.receipt_number}`);
    const receipt = await agent.getReceipt(chainId);
    checks.check(
      typeof receipt.signature === "string" && /^hmac-sha256:[0-9a-f]{64}$/.test(receipt.signature),
      "receipt signed (HMAC-SHA256)",
    );

    step(6, "The receipt verifies through v2 and through a public token link");
    const v2 = await api(base, adminKey, "GET", `/v1/verification/v2/receipts/${done.receipt_id}`);
    checks.check(
      v2.overall_status === "valid",
      "GET /v1/verification/v2/receipts/{id}",
      `overall_status=${v2.overall_status}`,
    );
    const token = await api(base, adminKey, "POST", "/v1/public-verification-tokens", {
      artifact_type: "receipt",
      artifact_id: done.receipt_id,
    });
    const pub = await fetch(token.public_url).then(
      (r) => r.json() as Promise<{ verification_status?: string; signature_status?: string }>,
    );
    checks.check(
      pub.verification_status === "valid",
      "public token link (no credentials)",
      `${token.public_url.replace(/verify\/.*/, "verify/…")} → verification_status=${pub.verification_status}, signature_status=${pub.signature_status}`,
    );

    step(7, "tollgate verify on the exported chain (offline, no HMAC key)");
    const exported = await api(base, adminKey, "GET", "/v1/receipts/export");
    const exportFile = path.join(dir, "receipts-export.json");
    writeFileSync(exportFile, JSON.stringify(exported, null, 2));
    const cli = spawnSync(
      process.execPath,
      [
        path.join(ROOT, "bin/tollgate.mjs"),
        "verify",
        exportFile,
        "--jwks",
        `${base}/.well-known/tollgate/receipt-keys.json`,
      ],
      {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    for (const line of `${cli.stdout}`.trim().split("\n")) say(paint(2, `   | ${line}`));
    checks.check(
      cli.status === 0 && /Result: VALID/.test(cli.stdout),
      "tollgate verify: VALID against the service's published keys",
      `exit ${cli.status}`,
    );
  } catch (err) {
    checks.check(false, "the demo ran to the end", (err as Error).stack ?? String(err));
  } finally {
    agent?.close();
    for (const p of procs.reverse()) await p.stop();
    if (opts.keep) say(`\nkept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  const ok = checks.failed === 0;
  say(
    `\n${ok ? paint(32, "All steps behaved as expected") : paint(31, `${checks.failed} step(s) did not behave`)} (${checks.passed} checks passed).`,
  );
  return ok ? 0 : 1;
}

function seconds(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 3600)
    throw new InvalidArgumentError("must be seconds between 0 and 3600");
  return n;
}

async function main(argv: string[]): Promise<number> {
  const program = new Command("npm run demo --")
    .description("Tollgate end to end on real MCP tools: service, sidecar, a scripted agent")
    .option(
      "--approve-after <seconds>",
      "approve pending approvals through the API after SECONDS (for CI)",
      seconds,
    )
    .option("--port <port>", "service port (default: a free one)", (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError("must be a port number");
      return n;
    })
    .option("--keep", "keep the temporary folder (logs, exported chain)")
    .exitOverride();
  try {
    program.parse(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  const o = program.opts<{ approveAfter?: number; port?: number; keep?: boolean }>();
  return runDemo({ approveAfterSeconds: o.approveAfter, port: o.port ?? 0, keep: Boolean(o.keep) });
}

process.exitCode = await main(process.argv.slice(2));
