/**
 * One logging module (src/telemetry/logger.ts) for every component: the service's, the
 * sidecar's and the operator's loggers redact the same secrets and name themselves.
 */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createOperatorLogger } from "../../operator/log.js";
import { createLogger as createSidecarLogger } from "../../sidecar/logger.js";
import { createLogger as createServiceLogger } from "../../src/service/logger.js";

const capture = () => {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, destination };
};

describe("every component logs through one module with one redaction list", () => {
  it.each([
    ["tollgate", (d: Writable) => createServiceLogger({ level: "info", destination: d })],
    ["tollgate-sidecar", (d: Writable) => createSidecarLogger("info", d)],
    ["tollgate-operator", (d: Writable) => createOperatorLogger({ level: "info", destination: d })],
  ])("%s redacts API keys, tokens, Secret data and headers, and error messages", async (name, make) => {
    const { lines, destination } = capture();
    const log = make(destination);
    log.info(
      {
        upstream: { apiKey: "tg_secret1", headers: { authorization: "Bearer tg_secret2" } },
        secret: { data: { "api-key": "dGdfc2VjcmV0Mw==" }, token: "tgs_secret4" },
        err: new Error("query failed for tga_secret5"),
      },
      "probe",
    );
    await new Promise((r) => setImmediate(r));
    const line = lines[0]!;
    expect(line.name).toBe(name);
    const text = JSON.stringify(line);
    for (const s of ["tg_secret1", "tg_secret2", "dGdfc2VjcmV0Mw==", "tgs_secret4", "tga_secret5"]) {
      expect(text).not.toContain(s);
    }
    expect(text).toContain("[REDACTED]");
  });

  it.each([
    ["a message string", "dial failed with tga_secret6", "dial failed with [REDACTED]"],
    ["a plain object", { code: 7 }, { code: 7 }],
    ["null", null, null],
  ])("logs `err` given as %s without throwing", async (_what, err, expected) => {
    const { lines, destination } = capture();
    createOperatorLogger({ level: "info", destination }).warn({ err }, "probe");
    await new Promise((r) => setImmediate(r));
    expect(lines[0]!.err).toEqual(expected);
  });
});
