/** bench/lib/wrk.ts: parsing wrk's summary (durations in every unit, failures counted). */
import { describe, expect, it } from "vitest";
import { parseWrk } from "../../bench/lib/wrk.js";

const summary = (extra: string) => `Running 10s test @ http://127.0.0.1:8000
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.69ms    3.53ms  38.49ms   73.97%
    Req/Sec     3.32k   210.11     3.70k    70.00%
  Latency Distribution
     50%  812.00us
     75%   11.20ms
     90%   13.90ms
     99%    1.02s
  33145 requests in 10.04s, 21.50MB read
${extra}Requests/sec:   3301.10
Transfer/sec:      2.14MB
`;

describe("parseWrk", () => {
  it("reads the rate, the request count and p50/p99 in ms whatever wrk's unit", () => {
    expect(parseWrk(summary(""))).toEqual({
      perSecond: 3301.1,
      requests: 33145,
      p50: 0.812,
      p99: 1020,
      errors: 0,
    });
  });

  it("counts non-2xx responses and socket errors as errors", () => {
    const r = parseWrk(
      summary("  Socket errors: connect 0, read 2, write 1, timeout 3\n  Non-2xx or 3xx responses: 7\n"),
    );
    expect(r.errors).toBe(13);
  });

  it("throws on output without a latency distribution", () => {
    expect(() => parseWrk("Requests/sec: 10\n1 requests in 1s")).toThrow(/could not parse wrk output/);
  });
});
