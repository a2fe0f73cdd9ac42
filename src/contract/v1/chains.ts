/**
 * Wire shapes of the chain routes (spec: "Endpoints", "Chain", "Recorded action", "Exit chain
 * context"): the request bodies the service validates, and the responses the client libraries
 * read. Response schemas name what a client may rely on and tolerate more (`looseObject`); the
 * service's producers are type-checked against them (`satisfies WireOf<…>`), so a field a client
 * relies on cannot disappear from one side only. Snake_case, as every wire shape.
 */
import { z } from "zod";
import {
  ActionSchema,
  EvaluationModeSchema,
  OutcomeSchema,
  PolicyConfigPatchSchema,
  WorkloadIdentitySchema,
} from "../../policy/schema.js";
import { EventOutcomeSchema, MAX_OUTCOMES_PER_BATCH } from "./wire.js";

/** What a producer must build for a response schema: the schema's input (defaults may be omitted). */
export type WireOf<S extends z.ZodType> = z.input<S>;

/** Body of POST /v1/chains. */
export const CreateChainSchema = z
  .object({
    name: z.string().min(1).max(200),
    metadata: z.record(z.string(), z.unknown()).default({}),
    policy_config: PolicyConfigPatchSchema.default({}),
    environment: z.string().min(1).max(63).optional(),
  })
  .strict();
export type CreateChain = z.infer<typeof CreateChainSchema>;
/** What a client sends to POST /v1/chains. */
export type CreateChainRequest = z.input<typeof CreateChainSchema>;

/** Body of POST /v1/chains/{chain_id}/actions (spec: "Recorded action"). */
export const RecordActionSchema = ActionSchema;
/** What a client sends to POST /v1/chains/{chain_id}/actions (payload already sanitized). */
export type RecordActionRequest = z.input<typeof RecordActionSchema>;

/** Body of POST /v1/chains/{chain_id}/complete: the failure that ended the chain, if any (absent body = none). */
export const CompleteChainSchema = z.preprocess(
  (v) => v ?? {},
  z
    .object({
      failure: z
        .object({
          mode: z.string().min(1).max(200),
          message: z.string().max(2000).default(""),
        })
        .strict()
        .nullable()
        .optional(),
    })
    .strict(),
);
export type CompleteChain = z.infer<typeof CompleteChainSchema>;
/** What a client sends to POST /v1/chains/{chain_id}/complete. */
export type CompleteChainRequest = z.input<typeof CompleteChainSchema>;

/** The spec's PolicyDecision as a client reads it: every field but the outcome has a default. */
export const WireDecisionSchema = z.looseObject({
  policy_decision: OutcomeSchema,
  decision_reason: z.string().default(""),
  decision_source: z.string().default("backend_evaluation"),
  policy_name: z.string().nullable().default(null),
  kill_switch_active: z.boolean().default(false),
  pause_reason: z.string().nullable().default(null),
  remediation: z.string().nullable().default(null),
  docs_url: z.string().nullable().default(null),
  evaluation_mode: EvaluationModeSchema.nullable().default(null),
  shadow_decision: OutcomeSchema.nullable().default(null),
  estimated_cost_usd: z.number().nullable().default(null),
  auto_paused: z.boolean().default(false),
});
export type WireDecision = z.infer<typeof WireDecisionSchema>;

/** Response of POST /v1/chains/{chain_id}/actions: the decision plus where it was recorded. */
export const RecordActionResponseSchema = WireDecisionSchema.extend({
  event_id: z.string(),
  chain_id: z.string().optional(),
  sequence: z.number().int().nullable().optional(),
  category: z.string().nullable().default(null),
  approval_id: z.string().nullable().default(null),
  /** ISO 8601; set with approval_id. */
  approval_expires_at: z.string().nullable().default(null),
  exception_id: z.string().nullable().default(null),
  chain_status: z.string().optional(),
});
export type RecordActionResponse = z.infer<typeof RecordActionResponseSchema>;

/** A chain (POST /v1/chains → 201, GET /v1/chains/{chain_id}). */
export const ChainViewSchema = z.looseObject({
  chain_id: z.string(),
  name: z.string(),
  metadata: z.record(z.string(), z.unknown()).default({}),
  policy_config: z.record(z.string(), z.unknown()).default({}),
  environment: z.string(),
  status: z.string(),
  failure: z.object({ mode: z.string(), message: z.string() }).nullable().optional(),
  receipt_id: z.string().nullable().optional(),
  /** The verified workload identity that opened the chain; null for API-key and session callers. */
  principal: WorkloadIdentitySchema.nullable().optional(),
});
export type ChainView = z.infer<typeof ChainViewSchema>;

/** A stored chain event (GET /v1/chains/{chain_id} → events[]). */
export const ChainEventSchema = z.looseObject({
  event_id: z.string(),
  sequence: z.number(),
  agent_name: z.string(),
  parent_agent_name: z.string().nullable(),
  action_type: z.string(),
  action_name: z.string(),
  payload: z.record(z.string(), z.unknown()),
  category: z.string().nullable(),
  decision: WireDecisionSchema,
  approval_id: z.string().nullable(),
  exception_id: z.string().nullable(),
  /** The verified workload identity that recorded the event ("who is asking"); null without one. */
  principal: WorkloadIdentitySchema.nullable().optional(),
});
export type ChainEvent = z.infer<typeof ChainEventSchema>;

/** GET /v1/chains/{chain_id}: the chain with its events in order. */
export const ChainDetailSchema = ChainViewSchema.extend({ events: z.array(ChainEventSchema) });
export type ChainDetail = z.infer<typeof ChainDetailSchema>;

/** POST /v1/chains/{chain_id}/complete → the seal. */
export const CompleteResponseSchema = z.looseObject({
  chain_id: z.string(),
  status: z.string(),
  receipt_id: z.string(),
  receipt_number: z.string(),
});
export type CompleteResponse = z.infer<typeof CompleteResponseSchema>;

/** One outcome of POST /v1/outcomes: which event, and what happened when it was carried out. */
export const OutcomeReportSchema = z
  .object({ chain_id: z.uuid(), event_id: z.uuid(), outcome: EventOutcomeSchema })
  .strict();
export type OutcomeReport = z.infer<typeof OutcomeReportSchema>;

/** Body of POST /v1/outcomes: 1..MAX_OUTCOMES_PER_BATCH outcomes. */
export const OutcomeBatchSchema = z
  .object({ outcomes: z.array(OutcomeReportSchema).min(1).max(MAX_OUTCOMES_PER_BATCH) })
  .strict();

/** POST /v1/chains/{chain_id}/events/{event_id}/outcome → the bound outcome. */
export const OutcomeResponseSchema = z.looseObject({
  chain_id: z.string(),
  event_id: z.string(),
  outcome: EventOutcomeSchema,
});

/** What the service did with one outcome of a batch (POST /v1/outcomes), in request order. */
export const OutcomeReportResultSchema = z.looseObject({
  chain_id: z.string(),
  event_id: z.string(),
  recorded: z.boolean(),
  /** Why it was not bound: the code the single route would have answered, e.g. TG_ERR_OUTCOME_RECORDED. */
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
});
export type OutcomeReportResult = z.infer<typeof OutcomeReportResultSchema>;

/** POST /v1/outcomes → one result per outcome. */
export const OutcomeBatchResponseSchema = z.looseObject({ results: z.array(OutcomeReportResultSchema) });
