/**
 * Entry point of the Tollgate operator (`node --import tsx operator/main.ts` or `tsx operator/main.ts`):
 * validates the environment (operator/config.ts), starts one replica, and stops gracefully on
 * SIGTERM/SIGINT (releasing the leader Lease so another replica takes over at once).
 */
import { Command, CommanderError } from "commander";
import { startTracing, TelemetryConfigError } from "../src/telemetry/tracing.js";
import { VERSION } from "../src/version.js";
import { loadOperatorConfig, OperatorConfigError, operatorEnvironmentHelp } from "./config.js";
import { createOperatorLogger } from "./log.js";
import { startOperator } from "./operator.js";

async function main(): Promise<void> {
  // --help and --version work without any configuration; everything else is environment.
  const program = new Command("tollgate-operator")
    .description(
      "Tollgate operator: reconciles Organization, GovernancePolicy and ApproverTeam into the governance service and injects the sidecar (admission webhook)",
    )
    .version(VERSION)
    .addHelpText("after", operatorEnvironmentHelp())
    .exitOverride();
  try {
    program.parse(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    throw err;
  }
  /** A configuration error (environment, kubeconfig) is one clear message and exit code 2. */
  const exitOnConfigError = (err: unknown): never => {
    if (err instanceof OperatorConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  };
  let config: ReturnType<typeof loadOperatorConfig>;
  try {
    config = loadOperatorConfig();
  } catch (err) {
    return exitOnConfigError(err);
  }
  const log = createOperatorLogger({ level: config.logLevel });
  // OTEL_* variables (README "Operations → Tracing"); off without OTEL_EXPORTER_OTLP_ENDPOINT.
  const tracing = await startTracing({ serviceName: "tollgate-operator", log }).catch((err: unknown) => {
    if (!(err instanceof TelemetryConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  });
  const operator = await startOperator({ config, log }).catch(exitOnConfigError);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    operator.stop().then(
      () => tracing.shutdown().then(() => process.exit(0)),
      (err) => {
        log.error({ err: (err as Error).message }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

main().catch((err) => {
  process.stderr.write(`tollgate-operator: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
