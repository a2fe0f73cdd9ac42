/**
 * Wire shapes of POST /v1/policies/replay (issue 28, "Replay before enforce"; docs/policy-cel.md):
 * the request body the service validates and the answer clients (the operator, CI) read.
 * Snake_case, as every wire shape.
 */
import { z } from "zod";
import { OutcomeSchema, PolicyConfigPatchSchema } from "../../policy/schema.js";
import { NameSchema } from "./admin.js";

/** Longest replay window: 31 days, in milliseconds. */
export const MAX_REPLAY_WINDOW_MS = 31 * 86_400_000;
/** Most events one replay reads (events before the window that rebuild a chain's state included). */
export const MAX_REPLAY_EVENTS = 200_000;
/** Default of `max_events`. */
export const DEFAULT_REPLAY_EVENTS = 100_000;
/** Most changed events listed in `sample`. */
export const MAX_REPLAY_SAMPLE = 100;
/** Wall-clock limit of one replay, milliseconds: reading stops there and the answer is `truncated`. */
export const REPLAY_TIME_LIMIT_MS = 30_000;
/** Name a candidate that replaces no policy gets (it decides its place among the policies, which combine in name order). */
export const DEFAULT_CANDIDATE_NAME = "replay-candidate";

/**
 * Body of POST /v1/policies/replay.
 * - `candidate`: a policy config patch (the `config` of PUT .../policies/{name}, a GovernancePolicy spec).
 * - `replace`: the name of the organization's policy the candidate replaces (it must exist); without
 *   it the candidate is added under `name` (default "replay-candidate", which must not exist).
 * - `from`, `to`: ISO 8601 instants; events recorded in [from, to) are replayed; to > from, at most 31 days.
 * - `max_events`: at most this many events are read (≤ 200,000, default 100,000); `sample_size`:
 *   changed events listed (≤ 100, default 20).
 */
export const ReplayRequestSchema = z
  .object({
    candidate: PolicyConfigPatchSchema,
    replace: NameSchema.optional(),
    name: NameSchema.optional(),
    from: z.iso.datetime({ offset: true }),
    to: z.iso.datetime({ offset: true }),
    max_events: z.number().int().min(1).max(MAX_REPLAY_EVENTS).default(DEFAULT_REPLAY_EVENTS),
    sample_size: z.number().int().min(0).max(MAX_REPLAY_SAMPLE).default(20),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.replace !== undefined && body.name !== undefined && body.replace !== body.name) {
      ctx.addIssue({ code: "custom", path: ["name"], message: "name and replace differ; give one of them" });
    }
    const from = Date.parse(body.from);
    const to = Date.parse(body.to);
    if (!(to > from)) ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
    else if (to - from > MAX_REPLAY_WINDOW_MS) {
      ctx.addIssue({ code: "custom", path: ["to"], message: "the window may span at most 31 days" });
    }
  });
export type ReplayRequest = z.infer<typeof ReplayRequestSchema>;

/** The outcome a decision had (before: as recorded by the engine; after: the candidate's) and who named it. */
const SideSchema = z.looseObject({ outcome: OutcomeSchema, policy_name: z.string().nullable() });

/** One changed event in the answer's sample. */
export const ReplayChangeSchema = z.looseObject({
  event_id: z.uuid(),
  chain_id: z.uuid(),
  sequence: z.number().int(),
  recorded_at: z.string(),
  agent_name: z.string(),
  action_type: z.string(),
  action_name: z.string(),
  before: SideSchema,
  after: SideSchema.extend({ decision_reason: z.string() }),
});

/**
 * The answer of POST /v1/policies/replay. `events_read`: events read (those before the window
 * that rebuild a chain's state included); `events_replayed`: events in the window decided again;
 * `chains_read`; `changed`: replayed events whose outcome differs; `changes`: counts by kind
 * ("allow→deny", …; only kinds that occurred); `sample`: the first `sample_size` changed events
 * in chain and sequence order; `duration_ms`; `truncated`: reading stopped at `max_events` or the
 * time limit (`truncated_by` says which), so later events were not replayed.
 */
export const ReplayResponseSchema = z.looseObject({
  from: z.string(),
  to: z.string(),
  candidate_name: z.string(),
  replaced: z.boolean(),
  events_read: z.number().int(),
  events_replayed: z.number().int(),
  chains_read: z.number().int(),
  changed: z.number().int(),
  changes: z.record(z.string(), z.number().int()),
  sample: z.array(ReplayChangeSchema),
  duration_ms: z.number(),
  truncated: z.boolean(),
  truncated_by: z.enum(["max_events", "time_limit"]).nullable(),
});
export type ReplayResponse = z.infer<typeof ReplayResponseSchema>;
