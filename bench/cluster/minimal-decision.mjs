// bench/cluster's floor, decision side: the least a recording service can do, in its own pod on the
// same in-cluster PostgreSQL as the service — a bare Fastify server whose one route,
// POST /v1/chains/{chain_id}/actions, stores the JSON body as one row (one INSERT, a `pg` pool of
// 20) and answers the row id. No auth, policy, chain state or guards (as
// bench/record-action/minimal.ts, which the out-of-cluster benchmarks use). Mounted from a
// ConfigMap into the product image, which has fastify and pg in /app/node_modules.
//   env DATABASE_URL, PORT (default 8080); stops on SIGTERM.
import { createRequire } from "node:module";

const require = createRequire("/app/package.json");
const Fastify = require("fastify");
const pg = require("pg");

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
await pool.query(
  "CREATE TABLE IF NOT EXISTS minimal_events (id bigserial PRIMARY KEY, chain_id text NOT NULL, body jsonb NOT NULL)",
);
const app = Fastify({ logger: false });
app.post("/v1/chains/:chain_id/actions", async (req) => {
  const { rows } = await pool.query({
    name: "minimal_insert",
    text: "INSERT INTO minimal_events (chain_id, body) VALUES ($1, $2) RETURNING id",
    values: [req.params.chain_id, req.body],
  });
  return { event_id: rows[0].id };
});
await app.listen({ port: Number(process.env.PORT ?? 8080), host: "0.0.0.0" });
process.on(
  "SIGTERM",
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
