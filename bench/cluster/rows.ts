/**
 * The result rows of bench/cluster from its raw samples: per round (tool calls) or per batch
 * (pod creation) a p50 and a p99, medians over rounds, ratios against the baseline of the same
 * run. Targets: the governed call's added latency as issue 30 sets it (p50 ≤ 1.5 ms, p99 ≤ 5 ms,
 * or, where this machine's floor is above that, within 1.1× of the minimal relay's added latency
 * measured pod to pod in the same run); admission as issue 9 set it. Reported, never gated.
 */
import { latencyHistogram, median, percentilesMs, type ResultRow, spreadPct } from "../lib/stats.js";
import type { CreateSample } from "./pod-create.js";
import type { LoadRound } from "./tool-call.js";

const BENCH = "cluster";
const TARGET_ADDED_P50_MS = 1.5;
const TARGET_ADDED_P99_MS = 5;
const TARGET_ADDED_VS_RELAY = 1.1;
const TARGET_ADMISSION_RATIO = 1.2;

type Q = "p50" | "p99";
type P = Record<Q, number>;

/** p50/p99 in ms of latencies in µs. */
function pOfUs(us: number[]): P {
  const h = latencyHistogram();
  for (const v of us) h.recordValue(v);
  const { p50, p99 } = percentilesMs(h);
  return { p50, p99 };
}

/** p50/p99 of latencies in ms (recorded at µs resolution). */
const pOfMs = (ms: number[]) => pOfUs(ms.map((v) => Math.max(1, Math.round(v * 1000))));

const spreadOf = (xs: number[]) => (xs.length > 1 ? spreadPct(xs) : null);

/** A row of `values` (one per round; the figure is their median), optionally against a baseline. */
function row(
  figure: string,
  values: number[],
  o: {
    baseline?: string;
    baselineValues?: number[];
    target?: string;
    met?: (v: number, b: number | null) => boolean;
  },
): ResultRow {
  const value = median(values);
  const baselineValue = o.baselineValues ? median(o.baselineValues) : null;
  return {
    benchmark: BENCH,
    figure,
    value,
    unit: "ms",
    baseline: o.baseline ?? "—",
    baselineValue,
    ratio: baselineValue ? value / baselineValue : null,
    better: "lower",
    target: o.target ?? "—",
    met: o.met ? o.met(value, baselineValue) : null,
    spreadPct: spreadOf(values),
    repeats: values.length,
  };
}

/**
 * Rows of phase 1: governed, minimal-relay and Go-relay calls vs direct p50/p99, the added
 * latency of the governed call against the relay's (the floor of these hops here), and the Go
 * relay's added latency against the Node.js relay's (ADR 0011).
 */
export function toolCallRows(rounds: LoadRound[], gapMs: number): ResultRow[] {
  const direct = rounds.map((r) => pOfUs(r.direct));
  const governed = rounds.map((r) => pOfUs(r.governed));
  const relay = rounds.map((r) => pOfUs(r.relay));
  const goRelay = rounds.map((r) => pOfUs(r.goRelay));
  const base = "direct call to the tool's Service from the same pod, same run";
  const rows: ResultRow[] = [];
  const at = (q: Q) => ({
    governed: governed.map((p) => p[q]),
    direct: direct.map((p) => p[q]),
    relay: relay.map((p) => p[q]),
    added: governed.map((p, i) => p[q] - direct[i]![q]),
    relayAdded: relay.map((p, i) => p[q] - direct[i]![q]),
    goRelay: goRelay.map((p) => p[q]),
    goRelayAdded: goRelay.map((p, i) => p[q] - direct[i]![q]),
  });
  for (const q of ["p50", "p99"] as const) {
    rows.push(
      row(
        `governed tool call ${q}, pod to pod (sidecar Invoke → service → tool; ${gapMs} ms gaps)`,
        at(q).governed,
        {
          baseline: base,
          baselineValues: at(q).direct,
        },
      ),
    );
  }
  for (const q of ["p50", "p99"] as const) {
    rows.push(
      row(`minimal relay call ${q}, pod to pod (the same hops, nothing done at them)`, at(q).relay, {
        baseline: base,
        baselineValues: at(q).direct,
      }),
    );
  }
  for (const q of ["p50", "p99"] as const) {
    rows.push(
      row(`Go relay call ${q}, pod to pod (the same hops in Go: grpc-go, net/http)`, at(q).goRelay, {
        baseline: base,
        baselineValues: at(q).direct,
      }),
    );
  }
  for (const [q, target] of [
    ["p50", TARGET_ADDED_P50_MS],
    ["p99", TARGET_ADDED_P99_MS],
  ] as const) {
    rows.push(
      row(`added ${q} (governed − direct)`, at(q).added, {
        baseline: "the minimal relay's added latency (relay − direct), same run",
        baselineValues: at(q).relayAdded,
        target: `≤ ${target} ms, or ≤ ${TARGET_ADDED_VS_RELAY}× the relay's where that is above it`,
        met: (v, b) => v <= target || (b !== null && b > target && v <= TARGET_ADDED_VS_RELAY * b),
      }),
    );
  }
  for (const q of ["p50", "p99"] as const) {
    rows.push(
      row(`Go relay added ${q} (Go relay − direct)`, at(q).goRelayAdded, {
        baseline: "the minimal relay's added latency (relay − direct), same run",
        baselineValues: at(q).relayAdded,
      }),
    );
  }
  return rows;
}

/** Rows of phase 2: admission and create → Ready, injected vs plain, p50/p99 per batch. */
export function podCreateRows(
  batches: { injected: CreateSample[]; plain: CreateSample[] }[],
  concurrency: number,
): ResultRow[] {
  const rows: ResultRow[] = [];
  const per = (kind: "injected" | "plain", f: "admissionMs" | "readyMs", q: Q) =>
    batches.map((b) => pOfMs(b[kind].map((s) => s[f]))[q]);
  const n = batches[0]?.injected.length ?? 0;
  for (const [f, what] of [
    ["admissionMs", "admission (create → API response)"],
    ["readyMs", "create → Ready"],
  ] as const) {
    for (const q of ["p50", "p99"] as const) {
      const admissionP99 = f === "admissionMs" && q === "p99";
      rows.push(
        row(`pod ${what} ${q}, injected (${n} pods, ${concurrency} at a time)`, per("injected", f, q), {
          baseline: "the same pod in an unlabelled namespace, same run",
          baselineValues: per("plain", f, q),
          ...(admissionP99 && {
            target: `≤ ${TARGET_ADMISSION_RATIO}× baseline`,
            met: (v: number, b: number | null) => b !== null && v <= TARGET_ADMISSION_RATIO * b,
          }),
        }),
      );
    }
  }
  return rows;
}
