/**
 * The pod's projected service account token (audience `tollgate`), which the sidecar presents to
 * the governance service as its verified workload identity (issue 27). The kubelet rewrites the
 * file at 80% of the token's lifetime (atomically, by swapping a `..data` symlink), so it is read
 * again every {@link REFRESH_MS}; a failed re-read keeps the last token (it stays valid until its
 * own expiry) and is logged once per failure streak. The token is a secret: it is never logged.
 */
import type { Logger } from "pino";
import { type ConfigError, readSecretFile } from "./config.js";

/** How often the token file is read again, ms (the kubelet rotates a 600 s token after 480 s). */
export const REFRESH_MS = 10_000;

/** A JWT's shape: three base64url parts. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const readToken = (file: string): Promise<string> =>
  readSecretFile(file, "TOLLGATE_SERVICE_TOKEN_FILE", "service account token (a JWT)", (t) => JWT.test(t));

/** The current token of a file, refreshed in the background. */
export interface ServiceToken {
  /** The last token read (a secret). */
  current(): string;
  /** Stops the refresh timer. */
  close(): void;
}

/**
 * Reads the token file and keeps it fresh.
 * @throws ConfigError naming TOLLGATE_SERVICE_TOKEN_FILE when the first read fails or the file
 *   holds no JWT (the sidecar exits with status 2: the pod spec is wrong).
 */
export async function watchServiceToken(
  file: string,
  log: Logger,
  refreshMs = REFRESH_MS,
): Promise<ServiceToken> {
  let token = await readToken(file);
  let failing = false;
  const timer = setInterval(() => {
    readToken(file).then(
      (t) => {
        token = t;
        if (failing) log.info({ file }, "service account token readable again");
        failing = false;
      },
      (err: ConfigError) => {
        if (!failing)
          log.warn(
            { file, reason: err.issues[0] },
            "cannot re-read the service account token; keeping the last one",
          );
        failing = true;
      },
    );
  }, refreshMs);
  timer.unref();
  return { current: () => token, close: () => clearInterval(timer) };
}
