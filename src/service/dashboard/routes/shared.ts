/**
 * What the dashboard's route modules share: rendering a page in the layout, the notices shown
 * after a redirect (`?done=`), and the two route options that keep the order of checks every
 * dashboard route has: who you are first (401/403), then the path and query (400, or a 404 for
 * an id that names nothing), then the form's CSRF token and fields (request.ts parseForm).
 */

import type { FastifyReply, FastifyRequest, FastifySchemaValidationError } from "fastify";
import { z } from "zod";
import { ApiErrorCode } from "../../../contract/v1/errors.js";
import { ApiError } from "../../errors.js";
import type { SafeHtml } from "../html.js";
import { type NavKey, type Notice, page, type Viewer } from "../layout.js";
import { type DashboardDeps, sendHtml } from "../request.js";

/** A UUID path or query value. */
export const Uuid = z.uuid();

/**
 * Sends `body` as a full page (status 200 unless `opts.status`), with the viewer's navigation,
 * `opts.active` highlighted and `opts.notices` above the body.
 */
export function renderPage(
  reply: FastifyReply,
  deps: DashboardDeps,
  viewer: Viewer | null,
  title: string,
  body: SafeHtml,
  opts: { active?: NavKey; notices?: Notice[]; status?: number } = {},
): FastifyReply {
  return sendHtml(
    reply,
    page({ title, viewer, active: opts.active, body, notices: opts.notices, devOidc: deps.devOidc }),
    opts.status ?? 200,
  );
}

/** Notices shown after a redirect, by `done` key. */
const doneNotices = {
  "team-saved": "The approver team was saved.",
  "member-saved": "The member was saved.",
  "key-revoked": "The API key was revoked. Calls with it are refused from now on.",
  "token-revoked": "The token was revoked. Its public link stops working now.",
  "kill-switch-on": "The kill switch is active: every action of the organization is denied.",
  "kill-switch-off": "The kill switch is off.",
  "pause-on": "The organization is paused.",
  "pause-off": "The organization resumed.",
} as const;

/** Query of a page that a form redirects back to: `done` names the notice; anything else is ignored. */
export const DoneQuerySchema = z.object({
  done: z
    .enum(Object.keys(doneNotices) as [keyof typeof doneNotices])
    .optional()
    .catch(undefined),
});

/** The notice for a parsed `?done=` (none when absent or unknown). */
export const doneNotice = (query: z.infer<typeof DoneQuerySchema>): Notice[] =>
  query.done ? [{ kind: "ok", text: doneNotices[query.done] }] : [];

/**
 * Route options that run `check` (requireViewer, requireDecider or requireAdmin) before the
 * route's schema validates params and query, so a stranger gets 401/403 and never a 400 that
 * describes the route. The handler calls `check` again to get the viewer.
 */
export const checkFirst = (check: (req: FastifyRequest) => Viewer) => ({
  preValidation: async (req: FastifyRequest) => {
    check(req);
  },
});

/**
 * Schema error formatter: a 400 TG_ERR_VALIDATION naming the first invalid field as
 * `field: message`, the same text parseFields gives form fields.
 */
export function invalidField(errors: FastifySchemaValidationError[]): ApiError {
  const first = errors[0];
  const field = first?.instancePath.split("/").filter(Boolean).join(".") || "form";
  return new ApiError(400, ApiErrorCode.VALIDATION, `${field}: ${first?.message ?? "invalid"}`);
}

/** A 404 ApiError as null (a record that is gone); any other error is rethrown. */
export function missingAsNull(err: unknown): null {
  if (err instanceof ApiError && err.statusCode === 404) return null;
  throw err;
}
