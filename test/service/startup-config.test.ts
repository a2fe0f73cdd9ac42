/**
 * Start-up configuration: a bad OTEL_* value is refused with the rest of the configuration,
 * before the service writes its generated development secrets (issue 29).
 */
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/service/config.js";

describe("OTEL_* variables", () => {
  it("are refused, naming the variable, before any key file is written", async () => {
    const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), "tg-config-")), "data");
    const err = await loadConfig([], {
      TOLLGATE_DATA_DIR: dataDir,
      OTEL_EXPORTER_OTLP_PROTOCOL: "carrier-pigeon",
      OTEL_TRACES_SAMPLER_ARG: "2",
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    const issues = (err as ConfigError).issues.join("\n");
    expect(issues).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL.*grpc, http\/protobuf or http\/json/);
    expect(issues).toMatch(/OTEL_TRACES_SAMPLER_ARG.*0 to 1/);
    expect(existsSync(dataDir) ? readdirSync(dataDir) : []).toEqual([]);
  });

  it("valid ones pass, and the dev secrets are then generated", async () => {
    const dataDir = path.join(mkdtempSync(path.join(os.tmpdir(), "tg-config-")), "data");
    await loadConfig([], {
      TOLLGATE_DATA_DIR: dataDir,
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4317",
    });
    expect(readdirSync(dataDir).sort()).toEqual(["admin-token", "master.key"]);
  });
});
