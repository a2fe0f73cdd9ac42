/**
 * The cross-replica half of the approval wake-up (approval-waiters.ts): one dedicated
 * PostgreSQL connection per service process, outside the pool, that LISTENs on
 * APPROVAL_CHANNEL and hands each notified chain id to `onNotify`. The connection reconnects
 * with a capped backoff when it fails; after every reconnect `onReconnect` runs, because
 * notifications sent while it was down are lost (the held requests then read again, and a
 * request that misses its wake-up still answers when its wait elapses). Not used on PGlite,
 * which serves one process (the in-process wake-up is enough there).
 */
import pg from "pg";
import type { Logger } from "../logger.js";
import { APPROVAL_CHANNEL } from "./waiters.js";

/** What the listener calls. */
export interface ApprovalListenerHandlers {
  /** A transaction that resolved an approval of `chainId` committed (on any replica). */
  onNotify(chainId: string): void;
  /** The connection came back after a failure; notifications may have been missed. */
  onReconnect(): void;
}

/** application_name of the LISTEN connection (visible in pg_stat_activity). */
export const LISTENER_APPLICATION_NAME = "tollgate-approval-listener";

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 10_000;

/** A LISTEN connection that stays connected until close(). */
export class ApprovalListener {
  #client: pg.Client | null = null;
  #closed = false;
  #retryMs = FIRST_RETRY_MS;
  #timer: NodeJS.Timeout | null = null;
  #connected = false;

  /** @param url PostgreSQL connection URL (a secret: never logged). */
  constructor(
    private readonly url: string,
    private readonly handlers: ApprovalListenerHandlers,
    private readonly log: Logger,
  ) {}

  /** Whether the LISTEN is active right now. */
  get listening(): boolean {
    return this.#connected;
  }

  /**
   * Connects and LISTENs. A failure is logged and retried in the background rather than
   * thrown: held requests still answer when their wait elapses without it.
   */
  async start(): Promise<void> {
    await this.#connect(false);
  }

  /** Stops reconnecting and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = null;
    this.#connected = false;
    await client?.end().catch(() => {});
  }

  async #connect(reconnect: boolean): Promise<void> {
    this.#timer = null;
    const client = new pg.Client({
      connectionString: this.url,
      application_name: LISTENER_APPLICATION_NAME,
      // A silently dropped connection (no RST) is found by TCP keepalive, not by the next query.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    this.#client = client;
    client.on("notification", (msg) => {
      if (msg.channel === APPROVAL_CHANNEL && msg.payload) this.handlers.onNotify(msg.payload);
    });
    client.on("error", (err) => this.#lost(client, err));
    client.on("end", () => this.#lost(client, null));
    try {
      await client.connect();
      await client.query(`LISTEN ${APPROVAL_CHANNEL}`);
    } catch (err) {
      this.#lost(client, err);
      return;
    }
    if (this.#client !== client) return;
    this.#connected = true;
    this.#retryMs = FIRST_RETRY_MS;
    if (reconnect) {
      this.log.info("approval listener reconnected");
      this.handlers.onReconnect();
    }
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#closed || this.#client !== client) return;
    this.#client = null;
    this.#connected = false;
    client.end().catch(() => {});
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    this.log.warn(
      {
        err: err instanceof Error ? { message: err.message, code: (err as { code?: unknown }).code } : null,
        retryMs: delay,
      },
      "approval listener connection lost; reconnecting",
    );
    this.#timer = setTimeout(() => void this.#connect(true), delay);
  }
}
