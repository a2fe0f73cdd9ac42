/**
 * What every credential source of an upstream is (credentials.ts builds one per upstream), and
 * the mounted Secret folder they all read: re-read when the kubelet swapped its `..data` link,
 * or, without one, when a file's inode, size or mtime changed (credentials.ts module comment).
 * A failure names the upstream, the Secret and the cause, never a value.
 */
import { readlinkSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../logger.js";
import type { CredentialsConfig } from "./schema.js";
import { UpstreamError } from "./types.js";

/** The errorClass of every credential failure (the outcome's error_class). */
export const CREDENTIAL_UNAVAILABLE = "CredentialUnavailable";

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value without control characters (no CR/LF injection); latin-1 only. */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Where the credentials of one upstream come from; one per upstream, shared by its calls. */
export interface CredentialSource {
  /** `bearer`, `headers`, `oauth2_client_credentials` or `token_exchange`. */
  readonly type: CredentialsConfig["type"];
  /**
   * The request headers carrying the credential (lower-case names), for one request.
   * `signal` stops waiting (a shared token request goes on for the others).
   * @throws UpstreamError `unavailable`/CredentialUnavailable when there is no credential;
   *   `aborted` when `signal` fired first.
   */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /**
   * The tool refused `used` (HTTP 401): a cached access token that is still the one sent is
   * dropped, so the next call fetches a new one. No-op for file credentials (the files are
   * re-read on every use anyway).
   */
  rejected(used: Record<string, string>): void;
}

/** Options of createCredentialSource. */
export interface CredentialSourceOptions {
  /** The upstream's name (the folder under credentialsDir; named in errors). */
  upstream: string;
  credentials: CredentialsConfig;
  /** TOLLGATE_CREDENTIALS_DIR. */
  credentialsDir: string;
  /** The upstream's per-call timeout in ms (caps the token request). */
  timeoutMs: number;
  /** TOLLGATE_SERVICE_TOKEN_FILE: the subject token of `token_exchange`. */
  serviceTokenFile?: string | null;
  log: Logger;
}

/** A credential failure: names the upstream, the Secret and the cause, never a value. */
export const unavailable = (upstream: string, secretName: string, cause: string) =>
  new UpstreamError(
    upstream,
    "unavailable",
    CREDENTIAL_UNAVAILABLE,
    `upstream ${upstream}: credential unavailable (Secret ${secretName}): ${cause}`,
  );

/** One snapshot of a mounted Secret: its version and the files read (key → trimmed value). */
export interface Snapshot {
  version: string;
  values: ReadonlyMap<string, string>;
}

/**
 * A mounted Secret folder, re-read when the kubelet swapped its `..data` link (or, without
 * one, when a file's inode, size or mtime changed). See the module comment.
 */
export class SecretDir {
  #snapshot: Snapshot | null = null;

  constructor(
    readonly upstream: string,
    readonly secretName: string,
    readonly dir: string,
  ) {}

  /** An UpstreamError for this Secret. */
  fail(cause: string): UpstreamError {
    return unavailable(this.upstream, this.secretName, cause);
  }

  /**
   * The current values of `keys` (null: every key in the folder), re-read when the Secret
   * changed.
   * @throws UpstreamError when a key is missing, unreadable or empty.
   */
  async read(keys: readonly string[] | null): Promise<Snapshot> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#read(keys);
      } catch (err) {
        // The kubelet removed the folder ..data pointed to between readlink and read: again.
        if (err instanceof Swapped && attempt < 2) continue;
        if (err instanceof Swapped) throw this.fail(`cannot read key ${err.key} (the Secret kept changing)`);
        if (err instanceof UpstreamError) throw err;
        throw this.fail(`cannot read ${this.dir} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
      }
    }
  }

  async #read(keys: readonly string[] | null): Promise<Snapshot> {
    const data = this.#dataLink();
    if (data !== null && this.#snapshot?.version === `..data:${data}`) return this.#snapshot;
    const base = data === null ? this.dir : path.resolve(this.dir, data);
    let names: string[];
    try {
      names = keys ? [...keys] : (await readdir(base)).filter((n) => !n.startsWith(".")).sort();
    } catch (err) {
      if (data !== null && (err as NodeJS.ErrnoException).code === "ENOENT") throw new Swapped("*");
      throw err;
    }
    const version =
      data !== null
        ? `..data:${data}`
        : (await Promise.all(names.map((n) => this.#fingerprint(base, n)))).join("|");
    if (this.#snapshot?.version === version) return this.#snapshot;
    const values = new Map<string, string>();
    for (const n of names) {
      let text: string;
      try {
        text = await readFile(path.join(base, n), "utf8");
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? "error";
        if (code === "ENOENT" && data !== null && this.#dataLink() !== data) throw new Swapped(n);
        throw this.fail(`cannot read key ${n} at ${path.join(this.dir, n)} (${code})`);
      }
      const value = text.trim();
      if (value === "") throw this.fail(`key ${n} is empty`);
      values.set(n, value);
    }
    this.#snapshot = { version, values };
    return this.#snapshot;
  }

  /**
   * The target of `..data`, or null for a plain folder. Synchronous on purpose: it runs on
   * every call, a Secret volume is a tmpfs (the syscall never waits for a disk), and readlinkSync
   * costs ~4 µs where fs.promises.readlink costs ~45 µs (a thread-pool round trip; measured on
   * Node 20, x86-64).
   */
  #dataLink(): string | null {
    try {
      return readlinkSync(path.join(this.dir, "..data"));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EINVAL" || code === "ENOTDIR") return null; // a plain folder
      throw err;
    }
  }

  async #fingerprint(base: string, name: string): Promise<string> {
    try {
      const s = await stat(path.join(base, name));
      return `${name}:${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      throw this.fail(`cannot read key ${name} at ${path.join(this.dir, name)} (${code})`);
    }
  }
}

/** The Secret was swapped while being read (the old folder is gone): read it again. */
class Swapped extends Error {
  constructor(readonly key: string) {
    super("the Secret changed while being read");
  }
}
