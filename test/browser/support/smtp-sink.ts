/**
 * A real SMTP server (`smtp-server`) on a loopback port that keeps every accepted mail, can
 * refuse the next N messages with a temporary failure, and parses what it received (headers,
 * the text part, the approval links) well enough for assertions.
 */
import { SMTPServer } from "smtp-server";

/** One accepted mail. */
export interface ReceivedMail {
  to: string;
  subject: string;
  headers: Record<string, string>;
  text: string;
  html: string;
  /** The approve and deny links of an approval mail (from the text part). */
  links: { approve: string | null; deny: string | null };
}

/** A running sink. */
export interface SmtpSink {
  port: number;
  mails: ReceivedMail[];
  /** Refuses the next `n` messages (after DATA) with `451 4.3.0 try again later`. */
  failNext(n: number): void;
  /** How many messages were refused so far. */
  refused(): number;
  /** Mails to `to`. */
  to(address: string): ReceivedMail[];
  close(): Promise<void>;
}

/** Starts a sink on 127.0.0.1 (no TLS, no auth; the transport uses SMTP_TLS=none). */
export async function startSmtpSink(opts: { delayMs?: number } = {}): Promise<SmtpSink> {
  const mails: ReceivedMail[] = [];
  let failing = 0;
  let refused = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const finish = () => {
          if (failing > 0) {
            failing--;
            refused++;
            const err = new Error("4.3.0 try again later") as Error & { responseCode: number };
            err.responseCode = 451;
            return callback(err);
          }
          const raw = Buffer.concat(chunks).toString("utf8");
          for (const rcpt of session.envelope.rcptTo) mails.push(parseMail(rcpt.address, raw));
          callback();
        };
        if (opts.delayMs) setTimeout(finish, opts.delayMs);
        else finish();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.server.address() as { port: number }).port;
  return {
    port,
    mails,
    failNext: (n) => {
      failing = n;
    },
    refused: () => refused,
    to: (address) => mails.filter((m) => m.to === address.toLowerCase()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Unfolds and splits a header block. Names are lowercased. */
function parseHeaders(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

/** Decodes RFC 2047 encoded words (Q and B). */
export function decodeWords(v: string): string {
  return v
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_m, _cs: string, enc: string, data: string) => {
      if (enc.toUpperCase() === "B") return Buffer.from(data, "base64").toString("utf8");
      const bytes = data
        .replace(/_/g, " ")
        .replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
      return Buffer.from(bytes, "latin1").toString("utf8");
    });
}

function decodeBody(body: string, encoding: string | undefined): string {
  const enc = (encoding ?? "7bit").toLowerCase();
  if (enc === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (enc === "quoted-printable") {
    const bytes = body
      .replace(/=\r?\n/g, "")
      .replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  return body;
}

function splitHead(raw: string): [string, string] {
  const i = raw.search(/\r?\n\r?\n/);
  if (i < 0) return [raw, ""];
  const sep = raw.slice(i).match(/^\r?\n\r?\n/)![0];
  return [raw.slice(0, i), raw.slice(i + sep.length)];
}

/** Parses a (multipart/alternative or single-part) message into its text and HTML parts. */
export function parseMail(to: string, raw: string): ReceivedMail {
  const [head, body] = splitHead(raw);
  const headers = parseHeaders(head);
  let text = "";
  let html = "";
  const ctype = headers["content-type"] ?? "text/plain";
  const boundary = /boundary="?([^";]+)"?/i.exec(ctype)?.[1];
  const parts = boundary ? body.split(`--${boundary}`).slice(1, -1) : [`${head}\r\n\r\n${body}`];
  for (const part of parts) {
    const [ph, pb] = splitHead(part.replace(/^\r?\n/, ""));
    const h = parseHeaders(ph);
    const decoded = decodeBody(pb, h["content-transfer-encoding"]);
    if ((h["content-type"] ?? "").startsWith("text/plain")) text = decoded;
    if ((h["content-type"] ?? "").startsWith("text/html")) html = decoded;
  }
  const link = (label: string) => new RegExp(`^${label}:\\s+(\\S+)$`, "m").exec(text)?.[1] ?? null;
  return {
    to: to.toLowerCase(),
    subject: decodeWords(headers.subject ?? ""),
    headers,
    text,
    html,
    links: { approve: link("Approve"), deny: link("Deny") },
  };
}
