import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, safeUrl } from "../../../src/service/logger.js";

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
