/**
 * Dashboard routes (spec: dashboard pages /dashboard/approvals, /dashboard/chains/{chain_id},
 * /dashboard/settings/team; "Authentication" 1, 4, 6). Every page is scoped to the viewer's
 * organization; every form is CSRF-protected and answers with a 303 redirect (or, when it
 * reveals a secret once, with the page itself, never cached).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { createApiKey, revokeApiKey } from "../auth.js";
import {
  type DecideApproval,
  decideApproval,
  ExceptionDurationSchema,
  getApproval,
  listApprovals,
} from "../approvals/decide.js";
import { chainEvents, chainView, getChain } from "../chains/record.js";
import {
  ApproverTeamSpecSchema,
  listApproverTeams,
  NameSchema,
  orgById,
  setOrgToggle,
  upsertApproverTeam,
  upsertMember,
} from "../orgs/orgs.js";
import {
  IssueTokenSchema,
  issueToken,
  ListTokensQuerySchema,
  listTokens,
  revokeToken,
} from "../receipts/public-tokens.js";
import { getReceipt } from "../receipts/complete.js";
import { verifyStoredReceipt } from "../receipts/verification.js";
import { ApiError, conflict, notFound } from "../errors.js";
import {
  ApprovalLinkQuerySchema,
  approvalLinkUsed,
  checkApprovalLink,
  consumeApprovalLink,
  linkFromQuery,
} from "../notify/links.js";
import { SCRIPT, STYLESHEET } from "./assets.js";
import { durationLabels, formatTime } from "./format.js";
import type { html } from "./html.js";
import { type NavKey, type Notice, page, type Viewer } from "./layout.js";
import { apiKeysBody, organizationBody, tokensBody } from "./pages/admin.js";
import { approvalsBody, type Preselect } from "./pages/approvals.js";
import { chainApprovals, chainBody, exceptionsUsed, type ReceiptSection } from "./pages/chain.js";
import { messageBody } from "./pages/message.js";
import { type MemberRow, type TeamRow, teamBody } from "./pages/team.js";
import {
  type DashboardDeps,
  parseFields,
  parseForm,
  requireAdmin,
  requireDecider,
  requireViewer,
  sendHtml,
} from "./request.js";

const Uuid = z.uuid();

/** Notices shown after a redirect, by `done` key. */
const doneNotices: Record<string, string> = {
  "team-saved": "The approver team was saved.",
  "member-saved": "The member was saved.",
  "key-revoked": "The API key was revoked. Calls with it are refused from now on.",
  "token-revoked": "The token was revoked. Its public link stops working now.",
  "kill-switch-on": "The kill switch is active: every action of the organization is denied.",
  "kill-switch-off": "The kill switch is off.",
  "pause-on": "The organization is paused.",
  "pause-off": "The organization resumed.",
};

const DecisionFormSchema = z.object({
  decision: z.enum(["approve", "deny"], { message: "choose approve or deny" }),
  notes: z.string().max(2000).optional(),
  exception: z.literal("on").optional(),
  exception_duration: ExceptionDurationSchema.optional(),
});

const TeamFormSchema = z.object({
  name: NameSchema,
  approvers: z.string().max(20_000).default(""),
  fallback_approvers: z.string().max(20_000).default(""),
});

const MemberFormSchema = z.object({
  email: z.string().trim().toLowerCase().pipe(z.email()),
  display_name: z.string().trim().max(200).optional(),
  roles: z
    .union([z.string(), z.array(z.string())])
    .transform((r) => (Array.isArray(r) ? r : [r]))
    .pipe(z.array(z.enum(["member", "admin", "approver"])).min(1, "choose at least one role")),
});

const KeyFormSchema = z.object({
  name: z.string().trim().min(1).max(200),
  role: z.enum(["client", "admin"]),
});
const ToggleFormSchema = z.object({
  active: z.enum(["true", "false"]).transform((v) => v === "true"),
  reason: z.string().trim().max(1000).optional(),
});

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

/** Registers the dashboard's pages and forms on `app` (inside the dashboard's context). */
export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  const { ctx } = deps;
  const now = () => ctx.clock.nowMs();
  const render = (
    reply: FastifyReply,
    v: Viewer | null,
    title: string,
    body: ReturnType<typeof html>,
    opts: { active?: NavKey; notices?: Notice[]; status?: number } = {},
  ) =>
    sendHtml(
      reply,
      page({ title, viewer: v, active: opts.active, body, notices: opts.notices, devOidc: deps.devOidc }),
      opts.status ?? 200,
    );
  const doneNotice = (req: FastifyRequest): Notice[] => {
    const key = (req.query as Record<string, unknown>)?.done;
    return typeof key === "string" && doneNotices[key] ? [{ kind: "ok", text: doneNotices[key] }] : [];
  };

  app.get("/dashboard", (_req, reply) => reply.redirect("/dashboard/approvals", 303));
  app.get("/dashboard/static/tollgate.css", (_req, reply) =>
    reply
      .header("content-type", "text/css; charset=utf-8")
      .header("cache-control", "public, max-age=3600")
      .send(STYLESHEET),
  );
  app.get("/dashboard/static/tollgate.js", (_req, reply) =>
    reply
      .header("content-type", "text/javascript; charset=utf-8")
      .header("cache-control", "public, max-age=3600")
      .send(SCRIPT),
  );

  // ---- approvals -------------------------------------------------------------------------

  async function approvalsPage(
    req: FastifyRequest,
    reply: FastifyReply,
    extra: { notices?: Notice[]; status?: number } = {},
  ) {
    const v = requireViewer(req);
    const q = parseFields(
      (req.query ?? {}) as Record<string, unknown>,
      z.object({
        approval: Uuid.optional().catch(undefined),
        decision: z.enum(["approve", "deny"]).optional().catch(undefined),
        from: z.string().optional(),
        decided: Uuid.optional().catch(undefined),
      }),
    );
    const pending = await listApprovals(ctx.db, v.orgId, { status: "pending", limit: 200 });
    const recent = (await listApprovals(ctx.db, v.orgId, { limit: 60 }))
      .filter((a) => a.status !== "pending")
      .slice(0, 15);
    const preselect: Preselect | null =
      q.approval && q.decision
        ? { approvalId: q.approval, decision: q.decision, fromLink: q.from === "link" }
        : null;
    const notices: Notice[] = [...(extra.notices ?? [])];
    if (q.decided) {
      const a = await getApproval(ctx.db, v.orgId, q.decided).catch(() => null);
      if (a && a.status !== "pending") {
        const exc = a.exception
          ? ` A ${durationLabels[a.exception.duration as keyof typeof durationLabels]} exception is active until ${formatTime(a.exception.expires_at)}.`
          : "";
        notices.push({
          kind: "ok",
          text: `Decision recorded: ${a.status}.${exc} The waiting agent has been released.`,
        });
      }
    }
    if (preselect && !pending.some((a) => a.approval_id === preselect.approvalId)) {
      notices.push({ kind: "warn", text: "That approval is no longer pending." });
    }
    return render(
      reply,
      v,
      "Approvals",
      approvalsBody({ viewer: v, pending, recent, nowMs: now(), preselect }),
      {
        active: "approvals",
        notices,
        status: extra.status,
      },
    );
  }

  app.get("/dashboard/approvals", (req, reply) => approvalsPage(req, reply));

  app.post("/dashboard/approvals/:approval_id/decision", async (req, reply) => {
    const v = requireDecider(req);
    const approvalId = parseFields(
      req.params as Record<string, unknown>,
      z.object({ approval_id: Uuid }),
    ).approval_id;
    const form = parseForm(req, deps, v, DecisionFormSchema);
    if (form.exception && form.decision === "deny") {
      return approvalsPage(req, reply, {
        status: 400,
        notices: [
          {
            kind: "bad",
            text: "A time-boxed exception can only be granted when approving. Uncheck it to deny.",
          },
        ],
      });
    }
    const body: DecideApproval = {
      decision: form.decision,
      ...(form.notes?.trim() && { notes: form.notes.trim() }),
      ...(form.exception && { exception_duration: form.exception_duration ?? "1d" }),
    };
    try {
      const result = await decideApproval(ctx.db, {
        orgId: v.orgId,
        approvalId,
        body,
        decidedBy: v.email,
        clock: ctx.clock,
        keys: ctx.keys,
      });
      const waited =
        (Date.parse(result.decided_at ?? result.requested_at) - Date.parse(result.requested_at)) / 1000;
      ctx.metrics.approvalWait.observe({ status: result.status }, Math.max(0, waited));
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 409) {
        return approvalsPage(req, reply, { status: 409, notices: [{ kind: "bad", text: err.message }] });
      }
      throw err;
    }
    return reply.redirect(`/dashboard/approvals?decided=${approvalId}`, 303);
  });

  app.get("/dashboard/approvals/:approval_id/link", async (req, reply) => {
    const refuse = (status: number, title: string, text: string) =>
      render(
        reply,
        req.viewer,
        title,
        messageBody({
          title,
          text,
          tone: "bad",
          actions: [{ href: "/dashboard/approvals", label: "Open pending approvals", primary: true }],
        }),
        {
          status,
        },
      );
    const id = Uuid.safeParse((req.params as Record<string, unknown>).approval_id);
    const query = ApprovalLinkQuerySchema.safeParse(req.query);
    if (!id.success || !query.success)
      return refuse(400, "Invalid link", "This approval link is incomplete or malformed.");
    const link = linkFromQuery(id.data, query.data);
    const refusal = checkApprovalLink(ctx.linkKey, link, query.data.sig, now());
    if (refusal === "invalid")
      return refuse(
        403,
        "Invalid link",
        "This approval link is not valid: it was altered or not issued by Tollgate.",
      );
    if (refusal === "expired")
      return refuse(410, "Link expired", "This approval link expired together with its approval.");
    if (await approvalLinkUsed(ctx.db, link)) {
      return refuse(
        409,
        "Link already used",
        "Each approval link works once. Open the approvals page to decide.",
      );
    }
    const v = req.viewer;
    if (!v) {
      return reply.redirect(`/auth/login?return_to=${encodeURIComponent(req.url)}`, 303);
    }
    if (v.email !== link.recipient) {
      return refuse(
        403,
        "Link for someone else",
        `This link was sent to another person. You are signed in as ${v.email}.`,
      );
    }
    const approval = await getApproval(ctx.db, v.orgId, link.approvalId).catch(() => null);
    if (!approval) return refuse(404, "Not found", "This approval does not exist in your organization.");
    if (approval.status !== "pending") {
      return refuse(409, "Already decided", `This approval is already ${approval.status.replace("_", " ")}.`);
    }
    if (!v.canDecide) return refuse(403, "Not allowed", "Only approvers and admins can decide approvals.");
    if (!(await consumeApprovalLink(ctx.db, link, v.email, now()))) {
      return refuse(
        409,
        "Link already used",
        "Each approval link works once. Open the approvals page to decide.",
      );
    }
    return reply.redirect(
      `/dashboard/approvals?approval=${link.approvalId}&decision=${link.decision}&from=link#approval-${link.approvalId}`,
      303,
    );
  });

  // ---- chains ----------------------------------------------------------------------------

  app.get("/dashboard/chains/:chain_id", async (req, reply) => {
    const v = requireViewer(req);
    const id = Uuid.safeParse((req.params as Record<string, unknown>).chain_id);
    if (!id.success) throw notFound("Chain");
    const row = await getChain(ctx.db, v.orgId, id.data);
    const chain = chainView(row);
    const events = await chainEvents(ctx.db, row.id);
    const approvals = await chainApprovals(ctx.db, row.id);
    const exceptions = await exceptionsUsed(ctx.db, v.orgId, [
      ...new Set(events.map((e) => e.exception_id).filter((x): x is string => !!x)),
    ]);
    let receipt: ReceiptSection = { kind: "none" };
    const stored = row.receipt_id
      ? await getReceipt(ctx.db, v.orgId, row.receipt_id).catch(missingAsNull)
      : null;
    if (row.receipt_id && !stored) receipt = { kind: "missing", receiptId: row.receipt_id };
    if (stored) {
      const base = {
        receiptNumber: stored.receipt_number,
        receiptId: stored.id,
        createdAt: stored.receipt.completed_at,
      };
      try {
        const verification = await verifyStoredReceipt(ctx.db, {
          orgId: v.orgId,
          receiptId: stored.id,
          hmacKey: ctx.receiptHmacKey,
          nowMs: now(),
        });
        receipt = { kind: "verified", ...base, verification };
      } catch (err) {
        ctx.log.warn({ err, receipt_id: stored.id }, "receipt verification failed on the chain page");
        receipt = { kind: "unverified", ...base, reason: "Verification is unavailable right now." };
      }
    }
    return render(
      reply,
      v,
      `Chain ${chain.name}`,
      chainBody({ chain, events, approvals, exceptions, receipt }),
      {
        active: "approvals",
      },
    );
  });

  // ---- team ------------------------------------------------------------------------------

  app.get("/dashboard/settings/team", async (req, reply) => {
    const v = requireViewer(req);
    const org = await orgById(ctx.db, v.orgId);
    const teams = (await listApproverTeams(ctx.db, v.orgId)) as TeamRow[];
    const { rows } = await ctx.db.query<MemberRow>(
      "SELECT email, display_name, roles FROM members WHERE org_id = $1 ORDER BY email",
      [v.orgId],
    );
    return render(
      reply,
      v,
      "Team",
      teamBody({ viewer: v, teams, members: rows, timeoutHours: org.approval_timeout_hours }),
      {
        active: "team",
        notices: doneNotice(req),
      },
    );
  });

  app.post("/dashboard/settings/team/teams", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, TeamFormSchema);
    const existing = (await listApproverTeams(ctx.db, v.orgId)).find((t) => t.name === form.name);
    if (existing?.managed_by) {
      throw conflict(
        "TG_ERR_MANAGED",
        `Team ${form.name} is managed by the ApproverTeam resource ${existing.managed_by}; edit the resource instead.`,
      );
    }
    const spec = parseFields(
      {
        approvers: lines(form.approvers).map((l) => {
          const [email, role] = l.split(/[\s,;]+/);
          return { email: email?.toLowerCase(), role: role === "admin" ? "admin" : "approver" };
        }),
        fallback_approvers: lines(form.fallback_approvers).map((l) => l.toLowerCase()),
      },
      ApproverTeamSpecSchema,
    );
    await upsertApproverTeam(ctx.db, v.orgSlug, form.name, spec, now());
    return reply.redirect("/dashboard/settings/team?done=team-saved", 303);
  });

  app.post("/dashboard/settings/team/members", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, MemberFormSchema);
    await upsertMember(
      ctx.db,
      v.orgSlug,
      form.email,
      { roles: [...new Set(form.roles)], ...(form.display_name && { display_name: form.display_name }) },
      now(),
    );
    return reply.redirect("/dashboard/settings/team?done=member-saved", 303);
  });

  // ---- admin: API keys -------------------------------------------------------------------

  async function apiKeysPage(
    reply: FastifyReply,
    v: Viewer,
    notices: Notice[],
    created?: { name: string; apiKey: string },
  ) {
    const { rows } = await ctx.db.query(
      "SELECT id, name, role, prefix, created_at, revoked_at FROM api_keys WHERE org_id = $1 ORDER BY created_at DESC",
      [v.orgId],
    );
    const keys = rows.map((r) => ({
      key_id: r.id,
      name: r.name,
      role: r.role,
      prefix: r.prefix,
      created_at: new Date(r.created_at).toISOString(),
      revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
    }));
    return render(reply, v, "API keys", apiKeysBody({ viewer: v, keys, created }), {
      active: "api-keys",
      notices,
    });
  }

  app.get("/dashboard/admin/api-keys", (req, reply) =>
    apiKeysPage(reply, requireAdmin(req), doneNotice(req)),
  );

  app.post("/dashboard/admin/api-keys", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, KeyFormSchema);
    const key = await createApiKey(ctx.db, {
      orgId: v.orgId,
      name: form.name,
      role: form.role,
      nowMs: now(),
    });
    ctx.log.info({ key_id: key.key_id, role: key.role, by: v.email }, "API key created in the dashboard");
    return apiKeysPage(reply, v, [], { name: form.name, apiKey: key.api_key });
  });

  app.post("/dashboard/admin/api-keys/:key_id/revoke", async (req, reply) => {
    const v = requireAdmin(req);
    const keyId = parseFields(req.params as Record<string, unknown>, z.object({ key_id: Uuid })).key_id;
    parseForm(req, deps, v, z.object({}));
    if (!(await revokeApiKey(ctx.db, ctx.apiKeys, { orgId: v.orgId, keyId, nowMs: now() })))
      throw notFound("API key");
    return reply.redirect("/dashboard/admin/api-keys?done=key-revoked", 303);
  });

  // ---- admin: public verification tokens -------------------------------------------------

  async function tokensPage(
    reply: FastifyReply,
    v: Viewer,
    notices: Notice[],
    issued?: { token: string; publicUrl: string; artifact: string },
  ) {
    const tokens = await listTokens(ctx.db, v.orgId, ListTokensQuerySchema.parse({}));
    const { rows } = await ctx.db.query<{ id: string; receipt_number: string }>(
      "SELECT id, receipt_number FROM receipts WHERE org_id = $1 ORDER BY sequence DESC LIMIT 20",
      [v.orgId],
    );
    return render(
      reply,
      v,
      "Verification tokens",
      tokensBody({ viewer: v, tokens, receipts: rows, issued }),
      {
        active: "tokens",
        notices,
      },
    );
  }

  app.get("/dashboard/admin/verification-tokens", (req, reply) =>
    tokensPage(reply, requireAdmin(req), doneNotice(req)),
  );

  app.post("/dashboard/admin/verification-tokens", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(
      req,
      deps,
      v,
      z.object({ artifact_type: z.string(), artifact_id: z.string().trim() }).pipe(IssueTokenSchema),
    );
    const issued = await issueToken(ctx.db, {
      orgId: v.orgId,
      body: form,
      createdBy: v.email,
      nowMs: now(),
      publicUrl: ctx.publicUrl,
    });
    return tokensPage(reply, v, [], {
      token: issued.token,
      publicUrl: issued.public_url,
      artifact: `${issued.artifact_type} ${issued.artifact_id}`,
    });
  });

  app.post("/dashboard/admin/verification-tokens/:token_id/revoke", async (req, reply) => {
    const v = requireAdmin(req);
    const tokenId = parseFields(req.params as Record<string, unknown>, z.object({ token_id: Uuid })).token_id;
    parseForm(req, deps, v, z.object({}));
    await revokeToken(ctx.db, { orgId: v.orgId, tokenId, nowMs: now() });
    return reply.redirect("/dashboard/admin/verification-tokens?done=token-revoked", 303);
  });

  // ---- admin: kill switch and pause ------------------------------------------------------

  app.get("/dashboard/admin/organization", async (req, reply) => {
    const v = requireAdmin(req);
    const org = await orgById(ctx.db, v.orgId);
    return render(
      reply,
      v,
      "Kill switch and pause",
      organizationBody({
        viewer: v,
        killSwitch: { active: org.kill_switch_active, reason: org.kill_switch_reason },
        pause: { active: org.paused, reason: org.pause_reason },
        managedBy: org.managed_by,
      }),
      { active: "organization", notices: doneNotice(req) },
    );
  });

  for (const which of ["kill-switch", "pause"] as const) {
    app.post(`/dashboard/admin/organization/${which}`, async (req, reply) => {
      const v = requireAdmin(req);
      const form = parseForm(req, deps, v, ToggleFormSchema);
      await setOrgToggle(
        ctx.db,
        v.orgSlug,
        which === "kill-switch" ? "kill_switch" : "pause",
        { active: form.active, reason: form.reason || null },
        now(),
      );
      ctx.log.warn(
        { organization: v.orgSlug, toggle: which, active: form.active, by: v.email },
        "organization toggle changed",
      );
      return reply.redirect(`/dashboard/admin/organization?done=${which}-${form.active ? "on" : "off"}`, 303);
    });
  }
}

/** A 404 ApiError as null (a record that is gone); any other error is rethrown. */
function missingAsNull(err: unknown): null {
  if (err instanceof ApiError && err.statusCode === 404) return null;
  throw err;
}
