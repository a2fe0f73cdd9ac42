/**
 * SMTP delivery through nodemailer (spec: "Events" 3). The transport is built from validated
 * configuration; the password is a secret and is never logged (describeSmtp omits it).
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import nodemailer from "nodemailer";
import { z } from "zod";

/** How the connection to the SMTP server is secured. */
export const SmtpTls = {
  /** TLS from the first byte (SMTPS, usually port 465). */
  implicit: "implicit",
  /** Plain connection upgraded with STARTTLS; refuses to send when the server does not offer it. */
  starttls: "starttls",
  /** STARTTLS when the server offers it, plain otherwise (local mail sinks). */
  opportunistic: "opportunistic",
  /** Never TLS (loopback test servers only). */
  none: "none",
} as const;
export type SmtpTls = (typeof SmtpTls)[keyof typeof SmtpTls];

/** Validated SMTP settings (env SMTP_*). `password` is a secret. */
export interface SmtpConfig {
  host: string;
  port: number;
  tls: SmtpTls;
  user?: string;
  password?: string;
  /** RFC 5322 From, e.g. `Tollgate <tollgate@example.com>`. */
  from: string;
  /** PEM file of an extra CA to trust for the server certificate. */
  caFile?: string;
  /** Connection, greeting and socket timeouts in ms (each). */
  timeoutMs: number;
}

/** One mail as the outbox hands it to a transport. */
export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
}

/** Something that sends one mail or throws; the outbox worker retries on throw. */
export interface MailTransport {
  send(mail: OutgoingMail): Promise<{ messageId?: string }>;
  close(): void;
}

/** A nodemailer SMTP transport for `config`. */
export function createSmtpTransport(config: SmtpConfig): MailTransport {
  const transporter = nodemailer.createTransport({
    host: config.host,
    port: config.port,
    secure: config.tls === "implicit",
    requireTLS: config.tls === "starttls",
    ignoreTLS: config.tls === "none",
    ...(config.user && { auth: { user: config.user, pass: config.password ?? "" } }),
    ...(config.caFile && { tls: { ca: readFileSync(config.caFile, "utf8") } }),
    connectionTimeout: config.timeoutMs,
    greetingTimeout: config.timeoutMs,
    socketTimeout: config.timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return {
    async send(mail) {
      const info = await transporter.sendMail(mail);
      return { messageId: info.messageId };
    },
    close: () => transporter.close(),
  };
}

/** The SMTP settings as they may be printed (no password). */
export function describeSmtp(c: SmtpConfig): Record<string, unknown> {
  return {
    host: c.host,
    port: c.port,
    tls: c.tls,
    user: c.user ?? null,
    password: c.password ? "(set)" : null,
    from: c.from,
  };
}

const boolText = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

/** Environment variables of SMTP delivery (merged into the service's EnvSchema). */
export const SmtpEnvSchema = z.object({
  SMTP_HOST: z.string().min(1).optional(),
  SMTP_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  SMTP_TLS: z.enum(Object.values(SmtpTls) as [SmtpTls, ...SmtpTls[]]).optional(),
  /** Legacy-style switch: true means implicit TLS (SMTPS). SMTP_TLS wins when both are set. */
  SMTP_SECURE: boolText.optional(),
  SMTP_USER: z.string().min(1).optional(),
  SMTP_PASSWORD: z.string().min(1).optional(),
  SMTP_PASSWORD_FILE: z.string().min(1).optional(),
  SMTP_FROM: z.string().min(3).max(320).default("Tollgate <tollgate@localhost>"),
  SMTP_CA_FILE: z.string().min(1).optional(),
  SMTP_TIMEOUT_MS: z.coerce.number().int().min(1000).max(120_000).default(20_000),
});

/**
 * SMTP settings from validated env; undefined when SMTP_HOST is unset (mail stays queued in
 * the outbox). Reads SMTP_PASSWORD_FILE. Pushes messages naming the variable into `issues`.
 */
export async function smtpFromEnv(
  e: z.infer<typeof SmtpEnvSchema>,
  issues: string[],
): Promise<SmtpConfig | undefined> {
  if (!e.SMTP_HOST) {
    for (const k of ["SMTP_USER", "SMTP_PASSWORD", "SMTP_PASSWORD_FILE", "SMTP_PORT"] as const) {
      if (e[k] !== undefined) issues.push(`${k}: requires SMTP_HOST`);
    }
    return undefined;
  }
  if (e.SMTP_PASSWORD && e.SMTP_PASSWORD_FILE)
    issues.push("SMTP_PASSWORD_FILE: set either SMTP_PASSWORD or SMTP_PASSWORD_FILE");
  const password =
    e.SMTP_PASSWORD ??
    (e.SMTP_PASSWORD_FILE ? (await readFile(e.SMTP_PASSWORD_FILE, "utf8")).trim() : undefined);
  if (password && !e.SMTP_USER) issues.push("SMTP_USER: required when a password is set");
  const tls: SmtpTls = e.SMTP_TLS ?? (e.SMTP_SECURE || e.SMTP_PORT === 465 ? "implicit" : "starttls");
  return {
    host: e.SMTP_HOST,
    port: e.SMTP_PORT ?? (tls === "implicit" ? 465 : 587),
    tls,
    ...(e.SMTP_USER && { user: e.SMTP_USER }),
    ...(password && { password }),
    from: e.SMTP_FROM,
    ...(e.SMTP_CA_FILE && { caFile: e.SMTP_CA_FILE }),
    timeoutMs: e.SMTP_TIMEOUT_MS,
  };
}
