/**
 * The demo's scripted agent in TypeScript, a process of its own:
 *
 *   node --import tsx src/demo/agent.ts --sidecar 127.0.0.1:50051 --workspace /path/to/folder
 *
 * A @grpc/grpc-js client of the sidecar's ToolGateway (gateway-client.ts) that opens a chain,
 * makes the script's calls — reads on the filesystem and memory MCP servers, an external e-mail
 * and a 7,500 USD payment (both wait for approval inside the sidecar), a bulk deletion the
 * organization's custom rule denies — completes the chain and fetches the signed receipt. It
 * reports each step as a JSON line on stdout (protocol.ts); src/demo/agent.py is the same script
 * in Python. Exit code 0 when the script ran to its end, 1 when a call failed outside the
 * script's reports (the sidecar unreachable, say), 2 for usage errors.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { connectGateway, Refusal } from "./gateway-client.js";
import type { CallId, ReportLineInput } from "./protocol.js";

const AGENT_NAME = "research-agent";

/** Writes one report line. */
const report = (line: ReportLineInput) => process.stdout.write(`${JSON.stringify(line)}\n`);

/** Parses the command line; exits 2 on a usage error. */
function options(): { sidecar: string; workspace: string } {
  try {
    const { values } = parseArgs({
      options: { sidecar: { type: "string" }, workspace: { type: "string" } },
      strict: true,
    });
    if (!values.sidecar || !values.workspace) throw new Error("--sidecar and --workspace are required");
    return { sidecar: values.sidecar, workspace: values.workspace };
  } catch (err) {
    process.stderr.write(
      `agent.ts: ${(err as Error).message}\nusage: agent.ts --sidecar HOST:PORT --workspace DIR\n`,
    );
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const { sidecar, workspace } = options();
  const gateway = connectGateway(sidecar);
  try {
    const chainId = await gateway.openChain("demo-research-run", { ticket: "DEMO-1" });
    report({
      type: "chain",
      chain_id: chainId,
      agent: `TypeScript (Node.js ${process.version}, @grpc/grpc-js)`,
    });

    /** One Invoke, reported as invoked or refused. */
    const invoke = async (id: CallId, upstream: string, action: string, payload: object) => {
      try {
        const r = await gateway.invoke({
          chain_id: chainId,
          agent_name: AGENT_NAME,
          action_name: action,
          upstream,
          payload,
        });
        report({
          type: "invoked",
          id,
          action,
          upstream,
          decision: r.decision,
          forwarded: r.forwarded,
          result: r.result_json ? JSON.parse(r.result_json) : null,
          upstream_error: r.upstream_error,
        });
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        report({
          type: "refused",
          id,
          action,
          upstream,
          code: err.code,
          details: err.details,
          decision: err.decision,
        });
      }
    };

    // 1. reads and a memory write
    await invoke("list", "files", "list_directory", { path: workspace });
    await invoke("read", "files", "read_text_file", { path: path.join(workspace, "notes.md") });
    const entities = Array.from({ length: 20 }, (_, i) => ({
      name: `lead-${String(i + 1).padStart(2, "0")}`,
      entityType: "lead",
      observations: [`found in research run DEMO-1 (#${i + 1})`],
    }));
    await invoke("create", "memory", "create_entities", { entities });
    await invoke("graph", "memory", "read_graph", {});
    // 2., 3. decided and recorded only (no upstream); each waits for approval in the sidecar
    await invoke("mail", "", "send_email", {
      to: "partner@globex.example",
      subject: "Q3 research summary",
      body: "Revenue grew 12% quarter over quarter.",
    });
    await invoke("payment", "", "pay_invoice", { invoice: "INV-7", amount_usd: 7500, payee: "Globex Corp" });
    // 4. the memory server's delete_entities carries no count: the agent states it
    const names = entities.map((e) => e.name);
    await invoke("delete", "memory", "delete_entities", { entityNames: names, count: names.length });
    await invoke("after", "memory", "read_graph", {});
    // 5. complete the chain, fetch the signed receipt
    const done = await gateway.completeChain(chainId);
    report({ type: "completed", ...done });
    report({ type: "receipt", receipt: await gateway.getReceipt(chainId) });
  } finally {
    gateway.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`agent.ts: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
