/**
 * /dashboard/admin/verification-tokens (admins): public verification tokens; issuing one
 * answers with the page showing its link once (never cached), revoking one redirects back.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { IssueTokenSchema, ListTokensQuerySchema } from "../../../contract/v1/verification.js";
import { issueToken, listTokens, revokeToken } from "../../receipts/public-tokens.js";
import { recentReceipts } from "../../receipts/store.js";
import type { Notice, Viewer } from "../layout.js";
import { tokensBody } from "../pages/admin.js";
import { type DashboardDeps, parseForm, requireAdmin } from "../request.js";
import { checkFirst, DoneQuerySchema, doneNotice, invalidField, renderPage, Uuid } from "./shared.js";

/** The issue form: the artifact id is trimmed before the API's own schema checks it. */
const IssueFormSchema = z
  .object({ artifact_type: z.string(), artifact_id: z.string().trim() })
  .pipe(IssueTokenSchema);

/** Registers GET and POST /dashboard/admin/verification-tokens and POST …/{token_id}/revoke. */
export function adminTokenRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  /** The tokens page; `issued` is the token just issued (its link shown once). */
  async function tokensPage(
    reply: FastifyReply,
    v: Viewer,
    notices: Notice[],
    issued?: { token: string; publicUrl: string; artifact: string },
  ) {
    const tokens = await listTokens(ctx.db, v.orgId, ListTokensQuerySchema.parse({}));
    const receipts = await recentReceipts(ctx.db, v.orgId);
    return renderPage(
      reply,
      deps,
      v,
      "Verification tokens",
      tokensBody({ viewer: v, tokens, receipts, issued }),
      { active: "tokens", notices },
    );
  }

  r.get("/dashboard/admin/verification-tokens", { schema: { querystring: DoneQuerySchema } }, (req, reply) =>
    tokensPage(reply, requireAdmin(req), doneNotice(req.query)),
  );

  r.post("/dashboard/admin/verification-tokens", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, IssueFormSchema);
    const issued = await issueToken(ctx.db, {
      orgId: v.orgId,
      body: form,
      createdBy: v.email,
      nowMs: ctx.clock.nowMs(),
      publicUrl: ctx.publicUrl,
    });
    return tokensPage(reply, v, [], {
      token: issued.token,
      publicUrl: issued.public_url,
      artifact: `${issued.artifact_type} ${issued.artifact_id}`,
    });
  });

  r.post(
    "/dashboard/admin/verification-tokens/:token_id/revoke",
    {
      ...checkFirst(requireAdmin),
      schema: { params: z.object({ token_id: Uuid }) },
      schemaErrorFormatter: invalidField,
    },
    async (req, reply) => {
      const v = requireAdmin(req);
      parseForm(req, deps, v, z.object({}));
      await revokeToken(ctx.db, { orgId: v.orgId, tokenId: req.params.token_id, nowMs: ctx.clock.nowMs() });
      return reply.redirect("/dashboard/admin/verification-tokens?done=token-revoked", 303);
    },
  );
}
