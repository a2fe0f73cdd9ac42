/**
 * `npm run demo [-- --approve-after SECONDS] [--agent ts|python]`: the whole governed flow on
 * real tools, locally, each part its own process — the governance service on embedded PGlite,
 * the sidecar with two real MCP servers as upstreams, and a scripted agent (TypeScript by
 * default, or Python) calling the tools through the sidecar's gRPC ToolGateway. The steps are
 * described in run.ts.
 *
 * SIGINT/SIGTERM stop the agent, the sidecar and the service (in that order) and remove the
 * temporary folder; the exit code is then 130/143. Otherwise: 0 only if every step behaved as
 * expected, 1 otherwise, 2 for usage errors.
 */
import os from "node:os";
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { AGENT_LANGUAGES, type AgentLanguage } from "./agents.js";
import { say } from "./output.js";
import { runDemo } from "./run.js";
import { Supervisor } from "./stack.js";

function seconds(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 3600)
    throw new InvalidArgumentError("must be seconds between 0 and 3600");
  return n;
}

function port(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError("must be a port number");
  return n;
}

/**
 * Stops every process of `sup` on SIGINT/SIGTERM, then exits 128 + the signal's number. Repeated
 * signals are ignored meanwhile (a terminal's Ctrl-C reaches the demo both directly and through
 * npm and tsx); the shutdown is bounded (SIGKILL after each process's grace). Whatever is left
 * when this process exits anyway is killed, and the temporary folder removed.
 */
function stopOnSignals(sup: Supervisor): void {
  let signalled = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (signalled) return;
      signalled = true;
      say(`\n${signal}: stopping the agent, the sidecar and the service ...`);
      void sup.shutdown().finally(() => process.exit(128 + os.constants.signals[signal]));
    });
  }
  process.once("exit", () => sup.killRemaining());
}

async function main(argv: string[]): Promise<number> {
  const program = new Command("npm run demo --")
    .description("Tollgate end to end on real MCP tools: service, sidecar, a scripted agent, each a process")
    .option(
      "--approve-after <seconds>",
      "approve pending approvals through the API after SECONDS (for CI)",
      seconds,
    )
    .addOption(
      new Option("--agent <language>", "the scripted agent: TypeScript or Python (grpcio)")
        .choices(AGENT_LANGUAGES)
        .default("ts"),
    )
    .option("--port <port>", "service port (default: a free one)", port)
    .option("--keep", "keep the temporary folder (logs, exported chain)")
    .exitOverride();
  try {
    program.parse(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  const o = program.opts<{ approveAfter?: number; agent: AgentLanguage; port?: number; keep?: boolean }>();
  const sup = new Supervisor();
  stopOnSignals(sup);
  return runDemo(
    { approveAfterSeconds: o.approveAfter, agent: o.agent, port: o.port ?? 0, keep: Boolean(o.keep) },
    sup,
  );
}

process.exitCode = await main(process.argv.slice(2));
