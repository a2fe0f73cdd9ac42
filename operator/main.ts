/**
 * Entry point of the Tollgate operator (`node --import tsx operator/main.ts` or `tsx operator/main.ts`):
 * validates the environment (operator/config.ts), starts one replica, and stops gracefully on
 * SIGTERM/SIGINT (releasing the leader Lease so another replica takes over at once).
 */
import { loadOperatorConfig, OperatorConfigError } from "./config.js";
import { createOperatorLogger } from "./log.js";
import { startOperator } from "./operator.js";

async function main(): Promise<void> {
  let config: ReturnType<typeof loadOperatorConfig>;
  try {
    config = loadOperatorConfig();
  } catch (err) {
    if (err instanceof OperatorConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createOperatorLogger({ level: config.logLevel });
  const operator = await startOperator({ config, log });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping");
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    operator.stop().then(
      () => process.exit(0),
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
