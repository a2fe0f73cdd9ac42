/**
 * `promtool check metrics` (Debian's `prometheus` package, installed by .ci/run) over a
 * Prometheus text exposition. Throws when promtool is missing: a metrics test without the
 * linter must fail, not pass silently.
 */
import { spawnSync } from "node:child_process";

/** What promtool said: exit code and its lint problems (one per line, empty when clean). */
export interface PromtoolResult {
  code: number;
  problems: string[];
}

/** Pipes `exposition` into `promtool check metrics`; throws if promtool is not installed. */
export function promtoolCheckMetrics(exposition: string): PromtoolResult {
  const r = spawnSync("promtool", ["check", "metrics"], {
    input: exposition,
    encoding: "utf8",
    timeout: 30_000,
  });
  if (r.error) {
    throw new Error(
      `promtool is required (apt-get install -y prometheus; .ci/run installs it): ${r.error.message}`,
    );
  }
  const problems = `${r.stdout}\n${r.stderr}`
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return { code: r.status ?? -1, problems };
}

/**
 * Runs `promtool <args>` (e.g. `check rules FILE`, `test rules FILE`) and returns its exit code
 * and output. Throws when promtool is not installed (with `env`, on that environment's PATH):
 * a rules test without promtool must fail, not pass silently.
 */
export function promtool(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { code: number; output: string } {
  const r = spawnSync("promtool", args, {
    encoding: "utf8",
    timeout: 60_000,
    cwd: opts.cwd,
    env: opts.env ?? process.env,
  });
  if (r.error) {
    throw new Error(
      `promtool is required (apt-get install -y prometheus; .ci/run installs it): ${r.error.message}`,
    );
  }
  return { code: r.status ?? -1, output: `${r.stdout}\n${r.stderr}` };
}

/** Fetches a /metrics URL and returns the exposition text (throws on a non-200). */
export async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 200)}`);
  const type = res.headers.get("content-type") ?? "";
  if (!type.startsWith("text/plain")) throw new Error(`GET ${url}: content-type ${type}`);
  return text;
}

/** The value of one sample line `name{labels} value` (labels as written by prom-client), or undefined. */
export function sample(exposition: string, series: string): number | undefined {
  for (const line of exposition.split("\n")) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1).split(" ")[0]);
  }
  return undefined;
}
