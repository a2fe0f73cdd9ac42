/**
 * The decide-only baseline: a bare Fastify server with one JSON POST route (parse the body,
 * answer a small JSON object) — what any Fastify service pays before doing its own work.
 * Prints its URL on stdout once listening.
 */
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.post("/hello", async (req) => ({ hello: "world", received: typeof req.body }));
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${address}\n`);
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
