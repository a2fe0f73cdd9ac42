/**
 * One run of the demo, composed of processes that meet over HTTP and gRPC only:
 *  0. the governance service (`node --import tsx src/service/main.ts`, embedded PGlite in a
 *     temporary folder; ready when /readyz answers), set up through its admin API; the sidecar
 *     (`node --import tsx sidecar/main.ts` with its environment; ready when /readyz answers),
 *     whose upstreams are real MCP servers over stdio; the scripted agent (TypeScript or Python;
 *     ready when its first report line names the chain it opened);
 *  1. reads (list_directory, read_text_file, read_graph) and a memory write are allowed;
 *  2. the first external communication (an e-mail to another company) waits for approval;
 *  3. a 7,500 USD payment waits for approval (the dashboard URL is printed; with
 *     --approve-after the demo approves both through the API after that many seconds);
 *  4. deleting 20 memory entities at once is denied by a custom rule and never reaches the tool;
 *  5. the chain completes with a signed receipt;
 *  6. the receipt verifies through /v1/verification/v2 and through a public token link;
 *  7. `tollgate verify` verifies the exported chain offline.
 * The agent reports what it saw (protocol.ts); the checks are made here, the same for both
 * languages.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type AgentLanguage, AgentRun, pythonInterpreter } from "./agents.js";
import { Checks, paint, say, step } from "./output.js";
import type { CallReport } from "./protocol.js";
import { APPROVER, api, bootstrapOrganization, ORG, prepareWorkspace, sidecarEnv } from "./setup.js";
import { DemoError, freePort, ROOT, type Supervisor, waitHttpReady } from "./stack.js";

/** Options of one demo run. */
export interface DemoOptions {
  /** Approve pending approvals through the API after this many seconds; undefined waits for a human. */
  approveAfterSeconds?: number;
  /** Service port (0 picks a free one). */
  port: number;
  /** Keep the temporary folder (logs, exported chain). */
  keep: boolean;
  /** The scripted agent's language. */
  agent: AgentLanguage;
}

/** What the steps after start-up need. */
interface Stack {
  base: string;
  adminKey: string;
  grpcAddress: string;
  workspace: string;
}

/** The text parts of a forwarded tool result, joined by newlines ("" when nothing came back). */
const toolText = (r: CallReport): string =>
  r.type === "invoked"
    ? ((r.result as { content?: { text?: string }[] } | null)?.content ?? [])
        .map((c) => c.text ?? "")
        .join("\n")
    : "";
/** An Invoke that the service allowed. */
const allowed = (r: CallReport): boolean => r.type === "invoked" && r.decision.policy_decision === "allow";
/** `detail`, or the refusal when the call was refused. */
const detailOf = (r: CallReport, detail: string): string =>
  r.type === "refused" ? `refused (gRPC ${r.code}): ${r.details}` : detail;
const leads = (r: CallReport): number => (toolText(r).match(/lead-\d\d/g) ?? []).length;

/** Step 0: the service, its organization, the sidecar. */
async function startStack(sup: Supervisor, dir: string, port: number): Promise<Stack> {
  const base = `http://127.0.0.1:${port}`;
  const serviceData = path.join(dir, "service");
  const service = sup.start("service", process.execPath, ["--import", "tsx", "src/service/main.ts"], {
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      TOLLGATE_DATA_DIR: serviceData,
      TOLLGATE_PUBLIC_URL: base,
      TOLLGATE_DEV_OIDC: "true",
      TOLLGATE_DEV_OIDC_USERS: APPROVER,
      LOG_LEVEL: "warn",
    },
  });
  await waitHttpReady(`${base}/readyz`, service);
  const adminToken = readFileSync(path.join(serviceData, "admin-token"), "utf8").trim();
  say(`   service   ${base}  (data in ${serviceData})`);

  const { clientKey, adminKey } = await bootstrapOrganization(base, adminToken);
  say(`   organization ${ORG}: client and admin API keys, approver team, custom rule no-bulk-memory-deletes`);

  const apiKeyFile = path.join(dir, "api-key");
  writeFileSync(apiKeyFile, `${clientKey}\n`, { mode: 0o600 });
  const workspace = path.join(dir, "workspace");
  prepareWorkspace(workspace);
  const grpcAddress = `127.0.0.1:${await freePort()}`;
  const httpAddress = `127.0.0.1:${await freePort()}`;
  const env = sidecarEnv({
    serviceUrl: base,
    apiKeyFile,
    grpcAddress,
    httpAddress,
    workspace,
    memoryFile: path.join(dir, "memory.jsonl"),
  });
  const sidecar = sup.start("sidecar", process.execPath, ["--import", "tsx", "sidecar/main.ts"], { env });
  await waitHttpReady(`http://${httpAddress}/readyz`, sidecar);
  say(
    `   sidecar   gRPC ${grpcAddress}, upstreams: files (server-filesystem on ${workspace}), memory (server-memory)`,
  );
  return { base, adminKey, grpcAddress, workspace };
}

/** Settles as `promise` does, or rejects naming `what` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DemoError(`${what} took longer than ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Steps 1–5: the agent's script, judged from its report. Returns the receipt's id. */
async function runScript(agent: AgentRun, stack: Stack, checks: Checks, opts: DemoOptions): Promise<string> {
  const opened = await within(agent.expect("chain"), 60_000, `${agent.proc.name}: opening the chain`);
  const chainId = opened.chain_id;
  say(`   agent     ${opened.agent}, process ${agent.proc.child.pid}`);
  say(`   chain     ${chainId}`);

  /** Waits until the chain has a pending approval (or the call's report came first) and approves it. */
  const approveWhenPending = async (what: string, reported: () => boolean): Promise<void> => {
    let approvalId: string | undefined;
    for (let i = 0; i < 600 && !approvalId && !reported(); i++) {
      const { approvals } = await api(stack.base, stack.adminKey, "GET", "/v1/approvals?status=pending");
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
    say(`   → review it at ${stack.base}/dashboard/approvals (development sign-in as ${APPROVER})`);
    if (opts.approveAfterSeconds === undefined) {
      say("   → waiting for a human decision in the dashboard ...");
      return;
    }
    say(`   → --approve-after: approving through the API in ${opts.approveAfterSeconds} s`);
    await new Promise((r) => setTimeout(r, opts.approveAfterSeconds! * 1000));
    const r = await api(stack.base, stack.adminKey, "POST", `/v1/approvals/${approvalId}/decision`, {
      decision: "approve",
      notes: "approved by npm run demo --approve-after",
    });
    checks.check(r.status === "approved", `${what}: approved through the API`);
  };

  /** The report of a call that waits for approval, approving it meanwhile. */
  const approved = async (id: "mail" | "payment", what: string): Promise<CallReport> => {
    const report = agent.call(id);
    let arrived = false;
    report.then(
      () => (arrived = true),
      () => (arrived = true),
    );
    await approveWhenPending(what, () => arrived);
    return report;
  };

  step(1, "Reads are allowed");
  const list = await agent.call("list");
  checks.check(
    allowed(list) && list.type === "invoked" && list.forwarded && /notes\.md/.test(toolText(list)),
    "files.list_directory allowed and forwarded",
    detailOf(list, toolText(list).replace(/\n/g, ", ")),
  );
  const read = await agent.call("read");
  checks.check(
    allowed(read) && /Revenue grew/.test(toolText(read)),
    "files.read_text_file allowed",
    detailOf(read, toolText(read).split("\n")[1] ?? ""),
  );
  const created = await agent.call("create");
  checks.check(
    allowed(created) && created.type === "invoked" && created.forwarded && !created.upstream_error,
    "memory.create_entities (20 leads) allowed",
    detailOf(created, ""),
  );
  const graph = await agent.call("graph");
  checks.check(
    allowed(graph) && leads(graph) >= 20,
    "memory.read_graph allowed, 20 leads stored",
    detailOf(graph, ""),
  );

  step(2, "The first external communication waits for approval");
  const mailed = await approved("mail", "send_email to globex.example (first external communication)");
  checks.check(
    allowed(mailed) && mailed.decision?.decision_source === "human_approval",
    "send_email went ahead after the human approval",
    detailOf(mailed, `decision_source=${mailed.decision?.decision_source}`),
  );

  step(3, "A 7,500 USD payment waits for approval");
  const paid = await approved("payment", "pay_invoice 7,500 USD");
  checks.check(
    allowed(paid) && paid.decision?.decision_source === "human_approval",
    "pay_invoice went ahead after the human approval",
    detailOf(paid, `decision_source=${paid.decision?.decision_source}`),
  );

  step(4, "A bulk deletion of 20 items is denied by a custom rule");
  const del = await agent.call("delete");
  checks.check(
    del.type === "refused" &&
      del.decision?.policy_decision === "deny" &&
      del.decision.policy_name === "no-bulk-memory-deletes",
    "memory.delete_entities (20 leads) denied",
    del.type === "refused"
      ? `${del.decision?.policy_name}: ${del.decision?.decision_reason}`
      : "it was allowed",
  );
  const after = await agent.call("after");
  checks.check(leads(after) >= 20, "the deletion never reached the memory server (20 leads still stored)");

  step(5, "The chain completes with a signed receipt");
  const done = await agent.expect("completed");
  checks.check(done.status === "completed", `chain completed`, `receipt ${done.receipt_number}`);
  const { receipt } = await agent.expect("receipt");
  checks.check(
    typeof receipt.signature === "string" && /^hmac-sha256:[0-9a-f]{64}$/.test(receipt.signature),
    "receipt signed (HMAC-SHA256)",
  );
  await agent.finished();
  return done.receipt_id;
}

/** Steps 6–7: the receipt verifies online (v2, public link) and offline (`tollgate verify`). */
async function verifyReceipt(stack: Stack, receiptId: string, dir: string, checks: Checks): Promise<void> {
  step(6, "The receipt verifies through v2 and through a public token link");
  const { base, adminKey } = stack;
  const v2 = await api(base, adminKey, "GET", `/v1/verification/v2/receipts/${receiptId}`);
  checks.check(
    v2.overall_status === "valid",
    "GET /v1/verification/v2/receipts/{id}",
    `overall_status=${v2.overall_status}`,
  );
  const token = await api(base, adminKey, "POST", "/v1/public-verification-tokens", {
    artifact_type: "receipt",
    artifact_id: receiptId,
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
    { cwd: ROOT, encoding: "utf8", timeout: 60_000 },
  );
  for (const line of `${cli.stdout}`.trim().split("\n")) say(paint(2, `   | ${line}`));
  checks.check(
    cli.status === 0 && /Result: VALID/.test(cli.stdout),
    "tollgate verify: VALID against the service's published keys",
    `exit ${cli.status}`,
  );
}

/** Runs the demo under `sup` (which the caller also stops on signals); resolves with the exit code. */
export async function runDemo(opts: DemoOptions, sup: Supervisor): Promise<number> {
  const checks = new Checks();
  const dir = mkdtempSync(path.join(os.tmpdir(), "tollgate-demo-"));
  if (!opts.keep) sup.defer(() => rmSync(dir, { recursive: true, force: true }));
  try {
    step(0, "Starting the governance service (embedded PGlite), the sidecar and two MCP servers");
    const python = opts.agent === "python" ? await pythonInterpreter() : undefined;
    const stack = await startStack(sup, dir, opts.port || (await freePort()));
    const agent = AgentRun.start(sup, opts.agent, {
      address: stack.grpcAddress,
      workspace: stack.workspace,
      python,
    });
    const receiptId = await runScript(agent, stack, checks, opts);
    await verifyReceipt(stack, receiptId, dir, checks);
  } catch (err) {
    if (sup.shuttingDown) return 1;
    const why =
      err instanceof DemoError
        ? err.message
        : err instanceof Error
          ? (err.stack ?? err.message)
          : String(err);
    checks.check(false, "the demo ran to the end", why);
  } finally {
    await sup.shutdown();
  }
  if (opts.keep) say(`\nkept ${dir}`);
  checks.summary();
  return checks.failed === 0 ? 0 : 1;
}
