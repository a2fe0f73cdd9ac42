/**
 * decide-only's baseline and floor.
 *
 * - Baseline (no arguments): a bare Fastify server with one JSON POST route, /hello (parse the
 *   body, answer a small JSON object) — what any Fastify service pays before doing its own work.
 * - Floor (`--read`, env DATABASE_URL: the service's database): the same server whose route
 *   POST /v1/chains/:chain_id/actions/evaluate reads the chain row with its organization by
 *   primary key (one prepared SELECT, a `pg` pool of 20 as the service's) and answers the chain's
 *   status — the least a decision that reads the chain's current state per request can cost,
 *   before authentication, validation and the policy engine.
 *
 * Prints its URL on stdout once listening; stops on SIGTERM.
 */
import Fastify from "fastify";
import pg from "pg";

const app = Fastify({ logger: false });
let pool: pg.Pool | null = null;
if (process.argv.includes("--read")) {
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
  pool = db;
  app.post<{ Params: { chain_id: string } }>("/v1/chains/:chain_id/actions/evaluate", async (req) => {
    const { rows } = await db.query({
      name: "floor_read_chain",
      text: "SELECT c.*, to_jsonb(o.*) AS org FROM chains c JOIN organizations o ON o.id = c.org_id WHERE c.id = $1",
      values: [req.params.chain_id],
    });
    return { chain_id: req.params.chain_id, status: rows[0]?.status ?? null, received: typeof req.body };
  });
} else {
  app.post("/hello", async (req) => ({ hello: "world", received: typeof req.body }));
}
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${address}\n`);
process.on(
  "SIGTERM",
  () =>
    void app
      .close()
      .then(() => pool?.end())
      .then(() => process.exit(0)),
);
