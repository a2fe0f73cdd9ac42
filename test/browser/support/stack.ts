/**
 * The approver-side stack for browser tests: the real service on a loopback port (its public
 * URL is that address, so links and OIDC redirects work), a fresh real database, the embedded
 * development OpenID provider (oidc-provider) at /dev-oidc, a real SMTP sink, an outbox worker
 * the test runs explicitly, and Debian's Chromium driven by playwright-core.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { buildService, type Service } from "../../../src/service/app.js";
import { ManualClock } from "../../../src/service/clock.js";
import { runDueJobs } from "../../../src/service/jobs.js";
import { createOutboxWorker, type OutboxWorker, type SmtpConfig } from "../../../src/service/notify/index.js";
import { DEV_OIDC_CLIENT_ID } from "../../../src/service/oidc/settings.js";
import { freshDatabase } from "../../support/db.js";
import { freePort } from "../../support/postgres.js";
import { api } from "./dashboard.js";
import { type SmtpSink, startSmtpSink } from "./smtp-sink.js";

/** Where page screenshots go (git-ignored test artifacts). */
export const SCREENSHOT_DIR = path.resolve("test-artifacts/screenshots");

/** Debian's Chromium; the browser tests fail (never skip) without it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** A running stack. */
export interface Stack {
  url: string;
  service: Service;
  clock: ManualClock;
  adminToken: string;
  sink: SmtpSink;
  browser: Browser;
  /** Delivers due outbox mail now; returns how many were sent. */
  deliverMail(): Promise<number>;
  runJobs(): Promise<number>;
  /** Creates an organization with client and admin API keys. */
  org(
    slug: string,
    spec?: Record<string, unknown>,
  ): Promise<{ slug: string; clientKey: string; adminKey: string }>;
  member(slug: string, email: string, roles: string[], displayName?: string): Promise<void>;
  /** A new browser context (its own cookies) with a page. */
  newPage(opts?: { mobile?: boolean }): Promise<{ context: BrowserContext; page: Page }>;
  close(): Promise<void>;
}

/** Starts the stack. */
export async function startStack(): Promise<Stack> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install -y chromium)`,
    );
  }
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const database = await freshDatabase();
  const sink = await startSmtpSink();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const clock = new ManualClock(Math.floor(Date.now() / 60_000) * 60_000);
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
  const smtp: SmtpConfig = {
    host: "127.0.0.1",
    port: sink.port,
    tls: "none",
    from: "Tollgate <tollgate@test.invalid>",
    timeoutMs: 5000,
  };
  const service = await buildService({
    db: database.db,
    masterKey: randomBytes(32),
    adminToken,
    publicUrl: url,
    clock,
    schedulerIntervalMs: 0,
    defaultMetrics: false,
    smtp,
    oidc: {
      issuerUrl: null,
      clientId: DEV_OIDC_CLIENT_ID,
      clientSecret: null,
      redirectUrl: null,
      scopes: "openid email profile",
      dev: { users: [] },
      allowInsecureHttp: false, // the development provider allows http on its own
    },
  });
  await service.app.listen({ port, host: "127.0.0.1" });
  const outbox: OutboxWorker = createOutboxWorker(service.ctx, smtp, { intervalMs: 60_000 });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
  const app = service.app;
  return {
    url,
    service,
    clock,
    adminToken,
    sink,
    browser,
    deliverMail: async () => (await outbox.runOnce()).sent,
    runJobs: () => runDueJobs(database.db, { clock, handlers: service.jobHandlers }),
    async org(slug, spec = {}) {
      const o = await api(app, "PUT", `/v1/admin/organizations/${slug}`, adminToken, spec);
      if (o.statusCode >= 300) throw new Error(`create org: ${o.body}`);
      const key = async (role: string) => {
        const r = await api(app, "POST", `/v1/admin/organizations/${slug}/api-keys`, adminToken, {
          name: `${role}-key`,
          role,
        });
        if (r.statusCode !== 201) throw new Error(`create key: ${r.body}`);
        return r.json().api_key as string;
      };
      return { slug, clientKey: await key("client"), adminKey: await key("admin") };
    },
    async member(slug, email, roles, displayName) {
      const r = await api(app, "PUT", `/v1/admin/organizations/${slug}/members/${email}`, adminToken, {
        roles,
        ...(displayName && { display_name: displayName }),
      });
      if (r.statusCode !== 200) throw new Error(`member: ${r.body}`);
    },
    async newPage(opts = {}) {
      const context = await browser.newContext(
        opts.mobile
          ? { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }
          : { viewport: { width: 1280, height: 900 } },
      );
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      return { context, page };
    },
    async close() {
      await browser.close().catch(() => {});
      await outbox.stop();
      await service.close();
      await sink.close();
      await database.close();
    },
  };
}

/**
 * Signs in through the embedded development provider as `email`: opens `path` (default the
 * approvals page), follows the redirect to the provider's sign-in page, picks the user, and
 * returns once back on the dashboard.
 */
export async function signIn(
  page: Page,
  stack: Stack,
  email: string,
  pathname = "/dashboard/approvals",
): Promise<void> {
  await page.goto(`${stack.url}${pathname}`);
  await page.waitForURL(/\/dev-oidc\/interaction\//);
  await page.getByRole("heading", { name: "Development sign-in" }).waitFor();
  await page.locator(`button[name="email"][value="${email}"]`).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/dev-oidc") && !u.pathname.startsWith("/auth/"));
}

/** Writes a full-page screenshot with one-time secrets masked (spec: no real keys in screenshots). */
export async function screenshot(page: Page, name: string): Promise<string> {
  await page.evaluate(() => {
    document.querySelectorAll<HTMLInputElement>("input[data-copy]").forEach((el) => {
      el.value = `${el.value.slice(0, 4)}•••••••• (masked in screenshot)`;
    });
  });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
