/**
 * Dashboard routes (spec: dashboard pages /dashboard/approvals, /dashboard/chains/{chain_id},
 * /dashboard/settings/team; "Authentication" 1, 4, 6), one module per page. Every page is
 * scoped to the viewer's organization; every form is CSRF-protected and answers with a 303
 * redirect (or, when it reveals a secret once, with the page itself, never cached).
 */
import type { FastifyInstance } from "fastify";
import type { DashboardDeps } from "../request.js";
import { adminApiKeyRoutes } from "./admin-api-keys.js";
import { adminOrganizationRoutes } from "./admin-organization.js";
import { adminTokenRoutes } from "./admin-tokens.js";
import { approvalLinkRoutes } from "./approval-link.js";
import { approvalsRoutes } from "./approvals.js";
import { chainRoutes } from "./chains.js";
import { settingsTeamRoutes } from "./settings-team.js";
import { staticRoutes } from "./static.js";

/** Registers the dashboard's pages and forms on `app` (inside the dashboard plugin's context). */
export async function dashboardRoutes(app: FastifyInstance, deps: DashboardDeps): Promise<void> {
  for (const register of [
    staticRoutes,
    approvalsRoutes,
    approvalLinkRoutes,
    chainRoutes,
    settingsTeamRoutes,
    adminApiKeyRoutes,
    adminTokenRoutes,
    adminOrganizationRoutes,
  ]) {
    register(app, deps);
  }
}
