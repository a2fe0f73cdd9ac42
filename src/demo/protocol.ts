/**
 * What a demo agent reports: one JSON object per line on its stdout, in the order of its script
 * (diagnostics go to stderr). The TypeScript agent (agent.ts) and the Python agent (agent.py)
 * write the same lines; the demo (run.ts) reads them and makes the checks, so both languages
 * are judged by the same code.
 *
 *   {"type":"chain", "chain_id", "agent"}                      first line: connected, chain opened
 *   {"type":"invoked", "id", "action", "upstream", "decision", "forwarded", "result", "upstream_error"}
 *   {"type":"refused", "id", "action", "upstream", "code", "details", "decision"}   (a gRPC error)
 *   {"type":"completed", "chain_id", "status", "receipt_id", "receipt_number"}
 *   {"type":"receipt", "receipt"}                              last line; then the agent exits 0
 *
 * `decision` is the tollgate.v1.Decision with the proto's field names (for a refusal, decoded
 * from the `tollgate-decision-bin` trailer, null when the service made no decision); `result` is
 * the parsed `result_json` (null when nothing was forwarded); `code` is the numeric gRPC status.
 */
import { z } from "zod";

/** The script's calls, in order: `id` of each invoked/refused line. */
export const SCRIPT_CALLS = [
  "list",
  "read",
  "create",
  "graph",
  "mail",
  "payment",
  "delete",
  "after",
] as const;
export type CallId = (typeof SCRIPT_CALLS)[number];

/** The fields of tollgate.v1.Decision the demo looks at (the others pass through). */
export const DecisionSchema = z
  .object({
    policy_decision: z.string(),
    decision_source: z.string(),
    decision_reason: z.string().default(""),
    policy_name: z.string().nullish(),
  })
  .loose();
export type ReportedDecision = z.infer<typeof DecisionSchema>;

const call = { id: z.enum(SCRIPT_CALLS), action: z.string(), upstream: z.string() };

/** An allowed Invoke. */
export const InvokedSchema = z.object({
  type: z.literal("invoked"),
  ...call,
  decision: DecisionSchema,
  forwarded: z.boolean(),
  result: z.unknown(),
  upstream_error: z.boolean(),
});
/** A refused Invoke (any gRPC error status). */
export const RefusedSchema = z.object({
  type: z.literal("refused"),
  ...call,
  code: z.number().int(),
  details: z.string(),
  decision: DecisionSchema.nullable(),
});

/** One line of an agent's report. */
export const ReportLineSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("chain"), chain_id: z.string().min(1), agent: z.string() }),
  InvokedSchema,
  RefusedSchema,
  z.object({
    type: z.literal("completed"),
    chain_id: z.string(),
    status: z.string(),
    receipt_id: z.string(),
    receipt_number: z.string(),
  }),
  z.object({ type: z.literal("receipt"), receipt: z.record(z.string(), z.unknown()) }),
]);
export type ReportLine = z.infer<typeof ReportLineSchema>;
/** A line as an agent writes it (defaults not yet applied). */
export type ReportLineInput = z.input<typeof ReportLineSchema>;
/** The report of one Invoke. */
export type CallReport = z.infer<typeof InvokedSchema> | z.infer<typeof RefusedSchema>;
