/**
 * record-action's floors: the least a recording service can do — a bare Fastify server whose
 * one route, POST /v1/chains/{chain_id}/actions, stores the parsed JSON body as one row and
 * answers the row id. No auth, policy, chain state or guards. Measured with the same load
 * client, clients and PostgreSQL as the real service, it shows how much of pgbench's rate a
 * Node.js + `pg` service reaches on this machine before doing any work of its own.
 *
 *   node --import tsx bench/record-action/minimal.ts                 one INSERT per request
 *                                                                     (a `pg` pool of 20)
 *   node --import tsx bench/record-action/minimal.ts --group-commit  requests that arrive while
 *                                                                     a statement runs go
 *                                                                     together in the next one
 *                                                                     (one in flight), as the
 *                                                                     service's RecordBatcher
 *
 * bench/sidecar-overhead's minimal relay uses the first as its decision server.
 *
 * Env DATABASE_URL. Prints its URL on stdout once listening; stops on SIGTERM.
 */
import Fastify from "fastify";
import pg from "pg";

const groupCommit = process.argv.includes("--group-commit");
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: groupCommit ? 2 : 20 });
await pool.query(
  "CREATE TABLE IF NOT EXISTS minimal_events (id bigserial PRIMARY KEY, chain_id uuid NOT NULL, body jsonb NOT NULL)",
);

/** One INSERT per event. */
async function insertOne(chainId: string, body: unknown): Promise<string> {
  const { rows } = await pool.query({
    name: "minimal_insert",
    text: "INSERT INTO minimal_events (chain_id, body) VALUES ($1, $2) RETURNING id",
    values: [chainId, body],
  });
  return rows[0].id;
}

/** Group commit: events queued while a statement runs are inserted together by the next. */
const queue: { chainId: string; body: unknown; resolve(id: string): void; reject(e: unknown): void }[] = [];
let running = false;
function insertGrouped(chainId: string, body: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    queue.push({ chainId, body, resolve, reject });
    void pump();
  });
}
async function pump(): Promise<void> {
  if (running || queue.length === 0) return;
  running = true;
  const batch = queue.splice(0, 64);
  try {
    const { rows } = await pool.query({
      name: "minimal_insert_batch",
      text: "INSERT INTO minimal_events (chain_id, body) SELECT * FROM unnest($1::uuid[], $2::jsonb[]) RETURNING id",
      values: [batch.map((e) => e.chainId), batch.map((e) => JSON.stringify(e.body))],
    });
    for (const [i, e] of batch.entries()) e.resolve(rows[i].id);
  } catch (err) {
    for (const e of batch) e.reject(err);
  } finally {
    running = false;
    void pump();
  }
}

const insert = groupCommit ? insertGrouped : insertOne;
const app = Fastify({ logger: false });
app.post<{ Params: { chain_id: string } }>("/v1/chains/:chain_id/actions", async (req) => ({
  event_id: await insert(req.params.chain_id, req.body),
}));
process.stdout.write(`${await app.listen({ port: 0, host: "127.0.0.1" })}\n`);
process.on(
  "SIGTERM",
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
