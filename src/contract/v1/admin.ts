/**
 * Wire shapes of the service admin API (README "Admin API"): the bodies of
 * PUT /v1/admin/organizations/{slug}, .../policies/{name} and .../approver-teams/{name}, and the
 * names in their paths. The service validates with them; the operator builds its bodies against
 * them (operator/controllers/<kind>/mapping.ts). Snake_case, as every wire shape.
 */
import { z } from "zod";
import { EvaluationModeSchema, PolicyConfigPatchSchema, RunawayLimitsSchema } from "../../policy/schema.js";

const slug = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, "must be lowercase letters, digits and hyphens");
export const SlugSchema = slug;
export const NameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/, "must be a lowercase DNS-style name");

const toggle = z.object({ active: z.boolean(), reason: z.string().max(1000).nullable().optional() }).strict();

/** Body of PUT /v1/admin/organizations/{slug} (also the Organization CRD spec, in snake_case). */
export const OrganizationSpecSchema = z
  .object({
    display_name: z.string().max(200).optional(),
    environment: z.string().min(1).max(63).default("production"),
    kill_switch: toggle.default({ active: false }),
    pause: toggle.default({ active: false }),
    approval_timeout_hours: z.number().positive().max(8760).default(24),
    evaluation_mode: EvaluationModeSchema.default("enforce"),
    runaway_limits: RunawayLimitsSchema.partial().optional(),
    /**
     * Whether client API keys may record actions (default true). Off: agents must authenticate
     * with a verified workload identity (a pod's service account token); admin keys still work.
     */
    api_keys_enabled: z.boolean().default(true),
    managed_by: z.string().max(200).optional(),
  })
  .strict();
export type OrganizationSpec = z.infer<typeof OrganizationSpecSchema>;

/** Body of PUT /v1/admin/organizations/{slug}/policies/{name} (GovernancePolicy spec). */
export const PolicySpecSchema = z
  .object({
    policy_version: z.string().min(1).max(100).optional(),
    config: PolicyConfigPatchSchema,
    managed_by: z.string().max(200).optional(),
  })
  .strict();
export type PolicySpec = z.infer<typeof PolicySpecSchema>;

/** Body of PUT /v1/admin/organizations/{slug}/approver-teams/{name} (ApproverTeam spec). */
export const ApproverTeamSpecSchema = z
  .object({
    approvers: z
      .array(
        z
          .object({
            email: z.string().email(),
            role: z.enum(["approver", "admin"]).default("approver"),
            name: z.string().max(200).optional(),
          })
          .strict(),
      )
      .default([]),
    fallback_approvers: z.array(z.string().email()).default([]),
    managed_by: z.string().max(200).optional(),
  })
  .strict();
export type ApproverTeamSpec = z.infer<typeof ApproverTeamSpecSchema>;
