import { Writable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { createLogger, lazyChildLogger, safeUrl } from "../../../src/service/logger.js";

describe("log redaction", () => {
  it.each([
    [
      "/dashboard/approvals/abc/link?d=approve&r=a%40b.c&exp=1&sig=SECRETSIG",
      "/dashboard/approvals/abc/link",
    ],
    ["/auth/callback?code=SECRETCODE&state=S", "/auth/callback"],
    ["/public/v2/verify/tgp_SECRETTOKEN", "/public/v2/verify/[REDACTED]"],
    ["/public/v2/verify/anything-else", "/public/v2/verify/[REDACTED]"],
    ["/v1/chains/123/actions", "/v1/chains/123/actions"],
  ])("safeUrl(%s) = %s", (url, expected) => {
    expect(safeUrl(url)).toBe(expected);
  });

  it("request lines and secret fields never reach the output", () => {
    let out = "";
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += chunk;
        cb();
      },
    });
    const log = createLogger({ level: "info", destination: sink });
    log.info(
      {
        req: {
          method: "GET",
          url: "/auth/callback?code=SECRETCODE",
          headers: { authorization: "Bearer tg_SECRET" },
        },
      },
      "incoming",
    );
    log.info({ config: { adminToken: "tga_SECRET", masterKey: "abc" }, api_key: "tg_SECRET2" }, "config");
    expect(out).toContain("/auth/callback");
    expect(out).not.toContain("SECRET");
  });
});

function sinkLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { log: createLogger({ level, destination: sink }), lines };
}

describe("lazyChildLogger", () => {
  it("makes no pino child for lines below the level, and a bound child for the first line written", async () => {
    const { log, lines } = sinkLogger("warn");
    const made = vi.spyOn(log, "child");
    const reqLog = lazyChildLogger(log, { reqId: "req-1" });
    reqLog.info({ req: { method: "GET" } }, "incoming request");
    reqLog.debug("details");
    expect(made).not.toHaveBeenCalled();
    expect(reqLog.level).toBe("warn");
    reqLog.error({ api_key: "tg_secret" }, "request failed");
    reqLog.warn("again");
    expect(made).toHaveBeenCalledTimes(1);
    await new Promise((r) => setImmediate(r));
    expect(lines).toMatchObject([
      { reqId: "req-1", msg: "request failed", api_key: "[REDACTED]" },
      { reqId: "req-1", msg: "again" },
    ]);
    expect(lines).toHaveLength(2);
  });

  it("passes bindings on to children, and a route's own level gets a real child", async () => {
    const { log, lines } = sinkLogger("info");
    lazyChildLogger(log, { reqId: "req-2" }).child({ chain_id: "c" }).info("nested");
    const routeLog = lazyChildLogger(log, { reqId: "req-3" }, { level: "error" });
    routeLog.info("hidden");
    expect(routeLog.level).toBe("error");
    await new Promise((r) => setImmediate(r));
    expect(lines).toMatchObject([{ reqId: "req-2", chain_id: "c", msg: "nested" }]);
    expect(lines).toHaveLength(1);
  });
});
