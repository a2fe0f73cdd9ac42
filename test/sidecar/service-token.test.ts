/**
 * The sidecar's workload token (issue 27): read from TOLLGATE_SERVICE_TOKEN_FILE, read again as
 * the kubelet rotates it (an atomic `..data` symlink swap, as for projected volumes), the last
 * good token kept while the file is unreadable, and a bad file refused at start naming the variable.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../sidecar/config.js";
import { type ServiceToken, watchServiceToken } from "../../sidecar/service-token.js";
import { pollUntil } from "../support/wait.js";

const jwt = (n: number) =>
  `${Buffer.from('{"alg":"RS256"}').toString("base64url")}.${Buffer.from(JSON.stringify({ n })).toString("base64url")}.c2lnbmF0dXJl${n}`;

/** A projected-volume layout: token → ..data/token, ..data → a timestamped directory. */
function projected(dir: string, token: string, generation: number): void {
  const data = path.join(dir, `..2026_${generation}`);
  mkdirSync(data);
  writeFileSync(path.join(data, "token"), token);
  symlinkSync(path.basename(data), path.join(dir, "..data_tmp"));
  renameSync(path.join(dir, "..data_tmp"), path.join(dir, "..data"));
}

let watched: ServiceToken | undefined;
afterEach(() => watched?.close());

describe("watchServiceToken", () => {
  it("follows the kubelet's rotation and keeps the last token while the file is unreadable", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-token-"));
    projected(dir, `${jwt(1)}\n`, 1);
    symlinkSync("..data/token", path.join(dir, "token"));
    const lines: string[] = [];
    const log = pino({ level: "info" }, { write: (l: string) => lines.push(l) });
    watched = await watchServiceToken(path.join(dir, "token"), log, 50);
    expect(watched.current()).toBe(jwt(1));

    projected(dir, jwt(2), 2);
    await pollUntil("the rotated token", async () => watched!.current() === jwt(2), 5000, 20);

    rmSync(path.join(dir, "..data"));
    await pollUntil("a warning", async () => lines.some((l) => l.includes("cannot re-read")), 5000, 20);
    expect(watched.current()).toBe(jwt(2));
    // The token never reaches the log.
    expect(lines.join("")).not.toContain(jwt(2).split(".")[1]);
  });

  it("refuses a missing file or one that holds no JWT, naming the variable", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-token-"));
    const log = pino({ level: "silent" });
    await expect(watchServiceToken(path.join(dir, "absent"), log)).rejects.toThrow(ConfigError);
    writeFileSync(path.join(dir, "bad"), "tg_not_a_token");
    await expect(watchServiceToken(path.join(dir, "bad"), log)).rejects.toThrow(
      /TOLLGATE_SERVICE_TOKEN_FILE/,
    );
  });
});
