/**
 * The approver's side in a real browser (Debian's Chromium through playwright-core): sign-in
 * through the real embedded OpenID provider (oidc-provider), deciding pending approvals while
 * the SDK caller blocks, following a signed link from a received mail, role and organization
 * boundaries, and the admin pages. Screenshots of each page go to test-artifacts/screenshots/.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActionDeniedError, Chain, createConfig } from "../../src/sdk/index.js";
import { api } from "./support/dashboard.js";
import { type Stack, screenshot, signIn, startStack } from "./support/stack.js";

let stack: Stack;
let acme: Awaited<ReturnType<Stack["org"]>>;

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.org("acme", { display_name: "Acme Corp", approval_timeout_hours: 24 });
  await stack.org("globex", { display_name: "Globex" });
  await stack.member("acme", "alice@acme.test", ["member", "approver"], "Alice Approver");
  await stack.member("acme", "ada@acme.test", ["member", "admin"], "Ada Admin");
  await stack.member("acme", "erin@acme.test", ["member"], "Erin Member");
  await stack.member("globex", "gina@globex.test", ["member", "approver"], "Gina Globex");
  await stack.member("acme", "pat@multi.test", ["member"], "Pat Two-Orgs");
  await stack.member("globex", "pat@multi.test", ["member", "approver"], "Pat Two-Orgs");
  const team = await api(
    stack.service.app,
    "PUT",
    "/v1/admin/organizations/acme/approver-teams/finance",
    stack.adminToken,
    {
      approvers: [{ email: "alice@acme.test", name: "Alice Approver" }],
      fallback_approvers: ["frank@acme.test"],
      managed_by: "ApproverTeam tollgate-system/finance",
    },
  );
  expect(team.statusCode, team.body).toBeLessThan(300);
});

afterAll(async () => {
  await stack?.close();
});

/** An SDK chain of acme that polls the approval status every 200 ms. */
async function sdkChain(name: string) {
  const config = createConfig(acme.clientKey, { backendUrl: stack.url }, { pollIntervalMs: 200 });
  return new Chain(name, { config }).enter();
}

/** Waits (real time, bounded) until acme has a pending approval for `chainId`. */
async function pendingFor(chainId: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const r = await api(stack.service.app, "GET", "/v1/approvals?status=pending", acme.adminKey);
    const hit = (r.json().approvals as { chain_id: string; approval_id: string }[]).find(
      (a) => a.chain_id === chainId,
    );
    if (hit) return hit.approval_id;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error("no pending approval appeared");
}

const card = (page: Page, approvalId: string) => page.locator(`#approval-${approvalId}`);

describe("deciding in the dashboard while the SDK caller waits", () => {
  it("signs in through the development provider, approves with a 1-day exception, and the blocked call resumes", async () => {
    const chain = await sdkChain("vendor-payments");
    let settled = false;
    const call = chain
      .recordAgentAction({
        agentName: "payments-agent",
        actionType: "tool_call",
        actionName: "wire_transfer",
        payload: {
          amount_usd: 7500,
          beneficiary: "Initech GmbH",
          url: "https://bank.example/transfers",
          password: "hunter2",
        },
      })
      .finally(() => {
        settled = true;
      });
    const approvalId = await pendingFor(chain.chainId!);
    const { context, page } = await stack.newPage();
    await page.goto(`${stack.url}/dashboard/approvals`);
    await page.waitForURL(/\/dev-oidc\/interaction\//);
    await expect(page.getByRole("note").first().textContent()).resolves.toContain("DEVELOPMENT ONLY");
    await screenshot(page, "01-dev-oidc-sign-in");
    await page.locator('button[name="email"][value="alice@acme.test"]').click();
    await page.waitForURL(`${stack.url}/dashboard/approvals`);
    await page.getByRole("heading", { name: "Pending approvals" }).waitFor();
    const c = card(page, approvalId);
    await expect(c.getByRole("heading").first().textContent()).resolves.toBe(
      "payments-agent → wire_transfer",
    );
    const text = (await c.textContent()) ?? "";
    expect(text).toContain("vendor-payments");
    expect(text).toContain(chain.chainId!);
    expect(text).toContain("1 d left");
    expect(text).toContain("Financial exposure");
    // The payload is shown sanitized: the password never reaches the page.
    await c.getByText("Payload (sanitized)").click();
    const payload = (await c.locator("pre").textContent()) ?? "";
    expect(payload).toContain("Initech GmbH");
    expect(payload).not.toContain("hunter2");
    await screenshot(page, "02-approvals-pending");
    expect(settled).toBe(false);

    await c.getByLabel("Approve").check();
    await c.getByLabel("Notes").fill("Invoice matches PO-4711");
    await c.getByLabel("Grant time-boxed exception").check();
    await c.getByLabel("Exception duration").selectOption("1d");
    await c.getByRole("button", { name: "Submit decision" }).click();
    await page.getByText("Decision recorded: approved.").waitFor();
    const notice = (await page.locator(".notice.ok").textContent()) ?? "";
    expect(notice).toContain("A 1 day exception is active until");
    await screenshot(page, "03-approvals-decided");

    const decision = await call;
    expect(decision.policy_decision).toBe("allow");
    expect(decision.decision_source).toBe("human_approval");
    // The exception now covers the same agent, action type and destination.
    const next = await chain.recordAgentAction({
      agentName: "payments-agent",
      actionType: "tool_call",
      actionName: "wire_transfer",
      payload: {
        amount_usd: 8000,
        url: "https://bank.example/transfers",
      },
    });
    expect(next.policy_decision).toBe("allow_with_flag");
    const done = await chain.exit();
    expect(done?.receipt_number).toMatch(/^PR-\d{4}-00001$/);

    await page.goto(`${stack.url}/dashboard/chains/${chain.chainId}`);
    await page.getByRole("heading", { name: "Chain vendor-payments" }).waitFor();
    const body = (await page.locator("main").textContent()) ?? "";
    expect(body).toContain("Authorized by the 1 day exception granted by alice@acme.test");
    expect(body).toContain(done!.receipt_number);
    const overall = page.locator("dt", { hasText: "Overall (v2)" }).locator("xpath=following-sibling::dd[1]");
    await expect(overall.textContent()).resolves.toBe("valid");
    await screenshot(page, "04-chain-timeline-receipt");
    await context.close();
  });

  it("denies with notes and the caller gets ActionDeniedError carrying them", async () => {
    const chain = await sdkChain("outreach");
    const call = chain
      .recordAgentAction({
        agentName: "mailer-agent",
        actionType: "tool_call",
        actionName: "send_wire",
        payload: { amount_usd: 9000 },
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    const approvalId = await pendingFor(chain.chainId!);
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "alice@acme.test");
    const c = card(page, approvalId);
    await c.getByLabel("Deny").check();
    await c.getByLabel("Notes").fill("Vendor is not on the approved list");
    await c.getByRole("button", { name: "Submit decision" }).click();
    await page.getByText("Decision recorded: denied.").waitFor();
    const err = await call;
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect((err as ActionDeniedError).condition).toBe("Vendor is not on the approved list");
    expect((err as ActionDeniedError).decisionSource).toBe("human_approval");
    await context.close();
    await chain.exit();
  });
});

describe("a link from a received mail", () => {
  it("leads through sign-in to the approvals page with the decision ready to confirm", async () => {
    stack.sink.mails.length = 0;
    const chain = await sdkChain("link-flow");
    const call = chain
      .recordAgentAction({
        agentName: "payments-agent",
        actionType: "tool_call",
        actionName: "refund",
        payload: { amount_usd: 6200 },
      })
      .catch((e) => e);
    const approvalId = await pendingFor(chain.chainId!);
    expect(await stack.deliverMail()).toBeGreaterThanOrEqual(1);
    const mail = stack.sink
      .to("alice@acme.test")
      .find((m) => m.headers["x-tollgate-approval-id"] === approvalId);
    expect(mail?.links.approve).toBeTruthy();
    expect(mail!.links.approve!.startsWith(`${stack.url}/dashboard/approvals/${approvalId}/link?`)).toBe(
      true,
    );
    const { context, page } = await stack.newPage();
    await page.goto(mail!.links.approve!);
    await page.waitForURL(/\/dev-oidc\/interaction\//);
    await page.locator('button[name="email"][value="alice@acme.test"]').click();
    await page.waitForURL(/\/dashboard\/approvals\?approval=/);
    const c = card(page, approvalId);
    await expect(c.locator(".notice.info").textContent()).resolves.toContain("You followed the approve link");
    expect(await c.getByLabel("Approve").isChecked()).toBe(true);
    await screenshot(page, "05-approvals-from-mail-link");
    // Nothing was decided yet: the link only pre-selected.
    const before = await api(stack.service.app, "GET", `/v1/approvals/${approvalId}`, acme.adminKey);
    expect(before.json().status).toBe("pending");
    await c.getByRole("button", { name: "Submit decision" }).click();
    await page.getByText("Decision recorded: approved.").waitFor();
    const decision = await call;
    expect(decision.decision_source).toBe("human_approval");
    // The same link again is refused.
    await page.goto(mail!.links.approve!);
    await page.getByRole("heading", { name: "Link already used" }).waitFor();
    await screenshot(page, "06-link-already-used");
    await context.close();
    await chain.exit();
  });
});

describe("roles and organizations", () => {
  let chainId: string;
  let approvalId: string;

  beforeAll(async () => {
    const c = await api(stack.service.app, "POST", "/v1/chains", acme.clientKey, { name: "member-view" });
    chainId = c.json().chain_id;
    const a = await api(stack.service.app, "POST", `/v1/chains/${chainId}/actions`, acme.clientKey, {
      agent_name: "payments-agent",
      action_type: "tool_call",
      action_name: "payout",
      payload: { amount_usd: 12_000 },
    });
    approvalId = a.json().approval_id;
  });

  it("a member sees the approval but cannot decide", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "erin@acme.test");
    const c = card(page, approvalId);
    await c.waitFor();
    expect(await c.getByRole("button", { name: "Submit decision" }).count()).toBe(0);
    await expect(c.textContent()).resolves.toContain("Only approvers and admins can decide");
    // A hand-made POST with a valid CSRF token is refused by role.
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const r = await page.request.post(`${stack.url}/dashboard/approvals/${approvalId}/decision`, {
      form: { _csrf: csrf, decision: "approve" },
      maxRedirects: 0,
    });
    expect(r.status()).toBe(403);
    // Admin pages are closed to members, and the navigation does not offer them.
    expect(await page.getByRole("link", { name: "API keys" }).count()).toBe(0);
    const keys = await page.goto(`${stack.url}/dashboard/admin/api-keys`);
    expect(keys?.status()).toBe(403);
    const st = await api(stack.service.app, "GET", `/v1/approvals/${approvalId}`, acme.adminKey);
    expect(st.json().status).toBe("pending");
    await screenshot(page, "07-member-read-only");
    await context.close();
  });

  it("an approver of another organization sees nothing of it", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "gina@globex.test");
    await expect(page.locator("p.lead").textContent()).resolves.toBe("Nothing is waiting for a decision.");
    expect(await page.locator("main").textContent()).not.toContain("member-view");
    const chainPage = await page.goto(`${stack.url}/dashboard/chains/${chainId}`);
    expect(chainPage?.status()).toBe(404);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const r = await page.request.post(`${stack.url}/dashboard/approvals/${approvalId}/decision`, {
      form: { _csrf: csrf, decision: "approve" },
      maxRedirects: 0,
    });
    expect(r.status()).toBe(404);
    const st = await api(stack.service.app, "GET", `/v1/approvals/${approvalId}`, acme.adminKey);
    expect(st.json().status).toBe("pending");
    await context.close();
  });

  it("a person in two organizations chooses one after sign-in", async () => {
    const { context, page } = await stack.newPage();
    await page.goto(`${stack.url}/dashboard/approvals`);
    await page.locator('button[name="email"][value="pat@multi.test"]').click();
    await page.getByRole("heading", { name: "Choose an organization" }).waitFor();
    await screenshot(page, "08-choose-organization");
    await page.getByLabel(/Globex/).check();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL(`${stack.url}/dashboard/approvals`);
    await expect(page.locator(".brand small").textContent()).resolves.toBe("Globex");
    await expect(page.locator(".who").textContent()).resolves.toContain("member, approver");
    await context.close();
  });

  it("signing out ends the session", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "alice@acme.test");
    const before = (await context.cookies()).find((c) => c.name === "tg_session")!;
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "You are signed out" }).waitFor();
    expect((await context.cookies()).find((c) => c.name === "tg_session")).toBeUndefined();
    // The old session is revoked on the server, not only forgotten by the browser.
    const replay = await fetch(`${stack.url}/dashboard/approvals`, {
      headers: { cookie: `tg_session=${before.value}` },
      redirect: "manual",
    });
    expect(replay.status).toBe(303);
    expect(replay.headers.get("location")).toMatch(/^\/auth\/login\?return_to=/);
    // "Sign in again" asks the identity provider to show its sign-in page (prompt=login).
    await page.getByRole("link", { name: "Sign in again" }).click();
    await page.getByRole("heading", { name: "Development sign-in" }).waitFor();
    await context.close();
  });
});

describe("team and admin pages", () => {
  it("shows approvers and fallback approvers, read-only when an ApproverTeam manages them", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "ada@acme.test", "/dashboard/settings/team");
    const team = page.locator("section", { has: page.getByRole("heading", { name: "Team finance" }) });
    await expect(team.textContent()).resolves.toContain("frank@acme.test");
    await expect(team.textContent()).resolves.toContain("managed by the ApproverTeam resource");
    expect(await team.getByText("Edit team finance").count()).toBe(0);
    await screenshot(page, "09-team-settings");
    await context.close();
  });

  it("creates an API key shown once, lists and revokes it", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "ada@acme.test", "/dashboard/admin/api-keys");
    await page.getByLabel("Name").fill("reporting-agent");
    await page.getByRole("button", { name: "Create key" }).click();
    const key = await page.locator("#new-api-key").inputValue();
    expect(key).toMatch(/^tg_[A-Za-z0-9_-]{43}$/);
    const use = await api(stack.service.app, "POST", "/v1/chains", key, { name: "with-new-key" });
    expect(use.statusCode).toBe(201);
    await screenshot(page, "10-api-key-created");
    await page.goto(`${stack.url}/dashboard/admin/api-keys`);
    expect(await page.locator("main").textContent()).not.toContain(key);
    await page.getByRole("button", { name: "Revoke key reporting-agent" }).click();
    await page.getByText("The API key was revoked.").waitFor();
    expect((await api(stack.service.app, "POST", "/v1/chains", key, { name: "x" })).statusCode).toBe(401);
    await context.close();
  });

  it("issues a public verification token once, lists and revokes it", async () => {
    const { rows } = await stack.service.ctx.db.query("SELECT id FROM receipts ORDER BY sequence LIMIT 1");
    const receiptId = rows[0]!.id as string;
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "ada@acme.test", "/dashboard/admin/verification-tokens");
    await page.getByLabel("Artifact id").fill(receiptId);
    await page.getByRole("button", { name: "Issue token" }).click();
    const link = await page.locator("#new-token").inputValue();
    expect(link).toMatch(new RegExp(`^${stack.url}/public/v2/verify/tgp_`));
    const pub = await fetch(link);
    expect(pub.status).toBe(200);
    await screenshot(page, "11-verification-token-issued");
    await page.goto(`${stack.url}/dashboard/admin/verification-tokens`);
    expect(await page.locator("main").textContent()).not.toContain(link.split("/").pop()!);
    await page.getByRole("button", { name: "Revoke" }).first().click();
    await page.getByText("The token was revoked.").waitFor();
    expect((await fetch(link)).status).not.toBe(200);
    await context.close();
  });

  it("toggles the kill switch and the pause", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "ada@acme.test", "/dashboard/admin/organization");
    await page.locator("#r-kill-switch").fill("Incident INC-42");
    await page.getByRole("button", { name: "Activate kill switch" }).click();
    await page.getByText("The kill switch is active").waitFor();
    const c = await api(stack.service.app, "POST", "/v1/chains", acme.clientKey, { name: "during-incident" });
    const r = await api(
      stack.service.app,
      "POST",
      `/v1/chains/${c.json().chain_id}/actions`,
      acme.clientKey,
      {
        agent_name: "reader",
        action_type: "tool_call",
        action_name: "read_file",
      },
    );
    expect(r.json()).toMatchObject({ policy_decision: "deny", kill_switch_active: true });
    await screenshot(page, "12-kill-switch-active");
    await page.getByRole("button", { name: "Deactivate kill switch" }).click();
    await page.getByText("The kill switch is off.").waitFor();
    await page.getByRole("button", { name: "Pause organization" }).click();
    await page.getByText("The organization is paused.").waitFor();
    await page.getByRole("button", { name: "Resume" }).click();
    await page.getByText("The organization resumed.").waitFor();
    await context.close();
  });

  it("stays usable on a phone", async () => {
    await api(stack.service.app, "POST", "/v1/chains", acme.clientKey, { name: "phone-view" });
    const { context, page } = await stack.newPage({ mobile: true });
    await signIn(page, stack, "alice@acme.test");
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await screenshot(page, "13-approvals-phone");
    await context.close();
  });
});

describe("sign-in edge cases", () => {
  it("refuses a person who is not a member anywhere", async () => {
    const { context, page } = await stack.newPage();
    await page.goto(`${stack.url}/dashboard/approvals`);
    await page.getByLabel("Or any e-mail address").fill("stranger@nowhere.test");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "No access" }).waitFor();
    expect((await context.cookies()).find((c) => c.name === "tg_session")).toBeUndefined();
    await context.close();
  });

  it("sets the session cookie HttpOnly and SameSite=Lax on path /", async () => {
    const { context, page } = await stack.newPage();
    await signIn(page, stack, "alice@acme.test");
    const session = (await context.cookies()).find((c) => c.name === "tg_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/", secure: false });
    expect(session?.value.startsWith("tgs_")).toBe(true);
    await context.close();
  });
});
