/**
 * The ApproverTeam custom resource's spec (namespaced; maps to PUT
 * .../approver-teams/{namespace}.{name}, operator/controllers/approverteam/mapping.ts).
 */
import { z } from "zod";
import { cel, email, mapList, OrganizationRefSchema, setList } from "./fields.js";

/** Spec of the namespaced ApproverTeam resource (maps to PUT .../approver-teams/{namespace}.{name}). */
export const ApproverTeamSpecSchema = z
  .object({
    organizationRef: OrganizationRefSchema,
    approvers: z
      .array(
        z
          .object({
            email: email.describe("E-mail address approval requests are sent to."),
            role: z.enum(["approver", "admin"]).default("approver"),
            name: z.string().min(1).max(200).optional(),
          })
          .strict(),
      )
      .max(100)
      .default([])
      .meta(mapList("email"))
      .describe("Who decides approval requests."),
    fallbackApprovers: z
      .array(email)
      .max(100)
      .default([])
      .meta(setList)
      .describe("Notified when an approval is still pending at half the approval timeout."),
  })
  .strict()
  .refine((t) => t.approvers.length > 0 || t.fallbackApprovers.length > 0, {
    message: "at least one approver or fallback approver is required",
    path: ["approvers"],
  })
  .refine(
    (t) =>
      !t.fallbackApprovers.some((f) => t.approvers.some((a) => a.email.toLowerCase() === f.toLowerCase())),
    { message: "a fallback approver must not also be an approver", path: ["fallbackApprovers"] },
  )
  .meta(
    cel(
      {
        rule: "(has(self.approvers) && size(self.approvers) > 0) || (has(self.fallbackApprovers) && size(self.fallbackApprovers) > 0)",
        message: "at least one approver or fallback approver is required",
        fieldPath: ".approvers",
        reason: "FieldValueRequired",
      },
      {
        rule: "!has(self.approvers) || !has(self.fallbackApprovers) || self.fallbackApprovers.all(f, !self.approvers.exists(a, a.email.lowerAscii() == f.lowerAscii()))",
        message: "a fallback approver must not also be an approver",
        fieldPath: ".fallbackApprovers",
      },
    ),
  );
export type ApproverTeamSpec = z.infer<typeof ApproverTeamSpecSchema>;
