/**
 * `npm run demo` without --approve-after, the way a person runs it: the demo waits at each
 * approval and prints the dashboard URL; a real Chromium signs in there through the development
 * OpenID provider as the demo's approver, approves the first external e-mail and the 7,500 USD
 * payment, and the demo then runs to the end and exits 0 (its service, sidecar and agent are
 * processes of their own, stopped by the demo; the folder it made is gone). Screenshots go to
 * test-artifacts/screenshots (demo-*.png).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, SCREENSHOT_DIR, screenshot } from "./support/stack.js";

const root = path.resolve(import.meta.dirname, "../..");
const APPROVER = "approver@demo-corp.example";

describe("npm run demo with a person approving in the dashboard", () => {
  let browser: Browser;
  let demo: ChildProcess;
  let out = "";

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`Chromium not found at ${CHROMIUM} (apt-get install -y chromium)`);
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    });
  });
  afterAll(async () => {
    // SIGTERM lets the demo stop its own processes (service, sidecar, agent); SIGKILL would orphan them.
    if (demo && demo.exitCode === null && demo.signalCode === null) {
      const gone = new Promise((r) => demo.once("exit", r));
      demo.kill("SIGTERM");
      const timer = setTimeout(() => demo.kill("SIGKILL"), 30_000);
      await gone;
      clearTimeout(timer);
    }
    await browser?.close();
  });

  /** Waits until the demo printed `re` (at or after `from`); returns the match. */
  const waitForOutput = async (re: RegExp, from = 0): Promise<RegExpMatchArray> => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const m = out.slice(from).match(re);
      if (m) return m;
      if (demo.exitCode !== null) throw new Error(`demo exited ${demo.exitCode}:\n${out}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const approve = async (page: Page, approvalId: string, notes: string) => {
    await page.goto(page.url());
    const card = page.locator(`#approval-${approvalId}`);
    await card.waitFor();
    await card.getByLabel("Approve").check();
    await card.getByLabel("Notes").fill(notes);
    await card.getByRole("button", { name: "Submit decision" }).click();
    await page.getByText("Decision recorded: approved.").waitFor();
  };

  it("waits for the person, then every step behaves and it exits 0", async () => {
    demo = spawn(process.execPath, ["--import", "tsx", "src/demo/main.ts"], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    demo.stdout!.on("data", (d) => (out += d));
    demo.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => demo.once("exit", (code) => r(code)));

    const first = await waitForOutput(
      /first external communication\): waiting for approval {2}approval ([0-9a-f-]{36})/,
    );
    const [, url] = await waitForOutput(/review it at (http:\/\/\S+\/dashboard\/approvals)/);
    expect(out).toMatch(/waiting for a human decision in the dashboard/);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(url!);
    await page.waitForURL(/\/dev-oidc\/interaction\//);
    await page.locator(`button[name="email"][value="${APPROVER}"]`).click();
    await page.waitForURL(url!);
    await page.getByRole("heading", { name: "Pending approvals" }).waitFor();
    await screenshot(page, "demo-01-first-external-mail-pending");
    await approve(page, first[1]!, "Summary may go to Globex");

    const payment = await waitForOutput(
      /pay_invoice 7,500 USD: waiting for approval {2}approval ([0-9a-f-]{36})/,
    );
    expect(payment[1]).not.toBe(first[1]);
    await page.goto(url!);
    const card = page.locator(`#approval-${payment[1]}`);
    await card.waitFor();
    expect(await card.textContent()).toContain("pay_invoice");
    await screenshot(page, "demo-02-payment-pending");
    await approve(page, payment[1]!, "INV-7 matches the purchase order");
    await context.close();

    expect(await exited, out).toBe(0);
    expect(out).toMatch(
      /✔ pay_invoice went ahead after the human approval {2}decision_source=human_approval/,
    );
    expect(out).toMatch(/All steps behaved as expected \(15 checks passed\)/); // no API approvals: 17 − 2
    expect(out).not.toContain("✘");
    const dir = out.match(/\(data in (\/\S+)\/service\)/)?.[1];
    expect(dir, out).toBeDefined();
    expect(existsSync(dir!)).toBe(false);
  }, 150_000);
});
