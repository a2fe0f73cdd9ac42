/**
 * The counter-advance rule (src/service/chains/counters.ts): what one recorded action adds to
 * its chain, as the pure function the hot path uses instead of reading the row back.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  advanceChain,
  advanceOf,
  type ChainCounters,
  type MetricsDelta,
} from "../../../src/service/chains/counters.js";

const chain = (over: Partial<ChainCounters> = {}): ChainCounters => ({
  event_count: 2,
  status: "open",
  total_tokens: 100,
  estimated_cost_usd: 0.5,
  financial_exposure_usd: 1000,
  external_communications_count: 1,
  records_modified_count: 3,
  domains_contacted: ["a.example"],
  external_comm_agents: ["mailer"],
  ...over,
});
const delta = (over: Partial<MetricsDelta> = {}): MetricsDelta => ({
  tokens: 10,
  estimated_cost_usd: 0.25,
  financial_exposure_usd: 500,
  external_communications: 1,
  records_modified: 2,
  domains: ["b.example"],
  ...over,
});

describe("advanceOf", () => {
  it("counts tokens and cost always, the other metrics only for an allowed action", () => {
    const denied = advanceOf(delta(), { sequence: 3, status: "open", allowed: false, agentName: "a" });
    expect(denied).toMatchObject({
      tokens: 10,
      costUsd: 0.25,
      financialExposureUsd: 0,
      externalCommunications: 0,
    });
    expect(denied.recordsModified).toBe(0);
    expect(denied.domains).toEqual([]);
    const allowed = advanceOf(delta(), { sequence: 3, status: "open", allowed: true, agentName: "a" });
    expect(allowed).toMatchObject({
      financialExposureUsd: 500,
      externalCommunications: 1,
      recordsModified: 2,
    });
    expect(allowed.domains).toEqual(["b.example"]);
  });
});

describe("advanceChain", () => {
  it("sets the sequence and status and adds every counter", () => {
    const next = advanceChain(
      chain(),
      advanceOf(delta(), { sequence: 3, status: "paused", allowed: true, agentName: "writer" }),
    );
    expect(next).toEqual({
      event_count: 3,
      status: "paused",
      total_tokens: 110,
      estimated_cost_usd: 0.75,
      financial_exposure_usd: 1500,
      external_communications_count: 2,
      records_modified_count: 5,
      domains_contacted: ["a.example", "b.example"],
      external_comm_agents: ["mailer", "writer"],
    });
  });

  it("keeps domains and communicating agents as sets, and leaves its input alone", () => {
    const before = chain();
    const next = advanceChain(
      before,
      advanceOf(delta({ domains: ["a.example"] }), {
        sequence: 3,
        status: "open",
        allowed: true,
        agentName: "mailer",
      }),
    );
    expect(next.domains_contacted).toEqual(["a.example"]);
    expect(next.external_comm_agents).toEqual(["mailer"]);
    expect(before).toEqual(chain());
  });

  it("remembers an agent only when it communicated externally", () => {
    const next = advanceChain(
      chain(),
      advanceOf(delta({ external_communications: 0 }), {
        sequence: 3,
        status: "open",
        allowed: true,
        agentName: "x",
      }),
    );
    expect(next.external_comm_agents).toEqual(["mailer"]);
  });

  it("is the sum of its advances, whatever they are (property)", () => {
    const deltaArb = fc.record({
      tokens: fc.nat(10_000),
      estimated_cost_usd: fc.nat(1000).map((n) => n / 100),
      financial_exposure_usd: fc.nat(100_000),
      external_communications: fc.nat(3),
      records_modified: fc.nat(50),
      domains: fc.array(fc.constantFrom("a.example", "b.example", "c.example"), { maxLength: 2 }),
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(deltaArb, fc.boolean(), fc.constantFrom("p", "q")), { maxLength: 20 }),
        (steps) => {
          let c = chain({
            event_count: 0,
            total_tokens: 0,
            estimated_cost_usd: 0,
            financial_exposure_usd: 0,
          });
          c = {
            ...c,
            external_communications_count: 0,
            records_modified_count: 0,
            domains_contacted: [],
            external_comm_agents: [],
          };
          for (const [i, [d, allowed, agent]] of steps.entries()) {
            c = advanceChain(c, advanceOf(d, { sequence: i + 1, status: "open", allowed, agentName: agent }));
          }
          const allowedSteps = steps.filter(([, allowed]) => allowed).map(([d, , a]) => ({ d, a }));
          expect(c.event_count).toBe(steps.length);
          expect(c.total_tokens).toBe(steps.reduce((n, [d]) => n + d.tokens, 0));
          expect(c.financial_exposure_usd).toBe(
            allowedSteps.reduce((n, { d }) => n + d.financial_exposure_usd, 0),
          );
          expect(new Set(c.domains_contacted)).toEqual(new Set(allowedSteps.flatMap(({ d }) => d.domains)));
          expect(new Set(c.external_comm_agents)).toEqual(
            new Set(allowedSteps.filter(({ d }) => d.external_communications > 0).map(({ a }) => a)),
          );
        },
      ),
    );
  });
});
