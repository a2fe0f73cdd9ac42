/**
 * The Organization custom resource's spec (cluster-scoped; maps to PUT
 * /v1/admin/organizations/{slug}, operator/controllers/organization/mapping.ts).
 */
import { z } from "zod";
import { EvaluationModeSchema, RunawayLimitsPatchSchema } from "../../src/policy/schema.js";
import { cel, DNS_LABEL, immutable, slug } from "./fields.js";

const limits = RunawayLimitsPatchSchema.shape;

const toggle = (what: string) =>
  z
    .object({
      active: z.boolean().default(false).describe(`Whether the ${what} is on.`),
      reason: z.string().min(1).max(1000).optional().describe(`Why the ${what} is on; required when active.`),
    })
    .strict()
    .refine((t) => !t.active || Boolean(t.reason), {
      message: `reason is required when the ${what} is active`,
      path: ["reason"],
    })
    .meta(
      cel({
        rule: "!self.active || has(self.reason)",
        message: `reason is required when the ${what} is active`,
        fieldPath: ".reason",
        reason: "FieldValueRequired",
      }),
    );

/** Spec of the cluster-scoped Organization resource (maps to PUT /v1/admin/organizations/{slug}). */
export const OrganizationSpecSchema = z
  .object({
    slug: slug
      .describe("The organization's slug in the governance service. Immutable.")
      .meta(immutable("slug")),
    displayName: z.string().min(1).max(200).optional().describe("Human-readable name."),
    environment: z
      .string()
      .min(1)
      .max(63)
      .regex(DNS_LABEL, "must be a lowercase DNS label")
      .default("production")
      .describe("Environment label recorded on chains (e.g. production, staging)."),
    killSwitch: toggle("kill switch")
      .default({ active: false })
      .describe("Kill switch: every action of the organization is denied while active."),
    pause: toggle("pause")
      .default({ active: false })
      .describe("Pause: every action is denied with the pause reason while active (e.g. during a review)."),
    approvalTimeoutHours: z
      .number()
      .positive()
      .max(8760)
      .default(24)
      .describe("Hours after which a pending approval times out (fallback approvers at half)."),
    evaluationMode: EvaluationModeSchema.default("enforce").describe(
      "enforce applies decisions; shadow only reports them in shadow_decision.",
    ),
    apiKeysEnabled: z
      .boolean()
      .default(true)
      .describe(
        "Whether client API keys may record actions. false: agents must present their pod's service account token (verified workload identity); admin keys still work.",
      ),
    runawayLimits: z
      .object({
        maxEvents: limits.max_events.describe("Actions per chain; 0 disables."),
        maxDurationSeconds: limits.max_duration_seconds.describe("Chain duration in seconds; 0 disables."),
        maxTokens: limits.max_tokens.describe("LLM tokens per chain; 0 disables."),
      })
      .strict()
      .optional()
      .describe("A chain auto-pauses at the action that crosses one of these limits."),
  })
  .strict();
export type OrganizationSpec = z.infer<typeof OrganizationSpecSchema>;
