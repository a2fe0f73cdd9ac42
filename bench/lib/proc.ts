/**
 * Per-process readings from Linux /proc for benchmarks: CPU time (user and system, all threads)
 * and resident set size; CPU time of waited-for children and of PostgreSQL; the machine's idle
 * share.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Kernel clock ticks per second (the unit of /proc/<pid>/stat times). */
const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time a process has used so far, in µs (user and system, all threads). */
export interface CpuTime {
  userUs: number;
  systemUs: number;
}

/**
 * The fields of /proc/<pid>/stat after the parenthesized command name (which may contain
 * spaces): [0] state, [1] ppid, … [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks).
 */
const statFields = (stat: string): string[] => stat.slice(stat.lastIndexOf(")") + 2).split(" ");
const ticksUs = (...ticks: (string | undefined)[]) =>
  (ticks.reduce((sum, t) => sum + Number(t), 0) / clockTicks) * 1e6;

/** Parent pid and CPU time of `pid` from /proc/<pid>/stat. @throws when the process is gone. */
export function procStat(pid: number): CpuTime & { ppid: number } {
  const f = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
  return { ppid: Number(f[1]), userUs: ticksUs(f[11]), systemUs: ticksUs(f[12]) };
}

/**
 * A process's CPU time so far (resolution one clock tick, 10 ms: read it over many calls).
 */
export function processCpu(pid: number): CpuTime {
  const { userUs, systemUs } = procStat(pid);
  return { userUs, systemUs };
}

/**
 * CPU time (µs, user + system) the live threads of `pid` have run so far, to the nanosecond:
 * the sum of /proc/<pid>/task/<tid>/schedstat. processCpu counts in clock ticks (10 ms), too
 * coarse for a process that runs a few ms over a short segment; this one misses the time of
 * threads that have exited, so read it for processes that keep their threads (a Node.js or Go
 * server). @throws when the process is gone.
 */
export function threadsCpuUs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ", 1)[0]);
    } catch {
      // exited meanwhile
    }
  }
  return ns / 1000;
}

/** User + system CPU time of process `pid` in seconds. */
export function cpuSeconds(pid: number): number {
  const { userUs, systemUs } = procStat(pid);
  return (userUs + systemUs) / 1e6;
}

/** Resident set size of process `pid` in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  return statusKib(pid, "VmRSS") * 1024;
}

/**
 * The anonymous part of a process's resident set in bytes (RssAnon of /proc/<pid>/status): its
 * heaps and stacks, what each process adds on its own. The rest of VmRSS is mostly the pages of
 * the `node` executable, which every process running the same file shares in the page cache.
 */
export function anonRssBytes(pid: number): number {
  return statusKib(pid, "RssAnon") * 1024;
}

/** Peak resident set size ("high water mark", VmHWM) of a live process, in bytes. */
export function peakRssBytes(pid: number): number {
  return statusKib(pid, "VmHWM") * 1024;
}

/** A `kB` field of /proc/<pid>/status. */
function statusKib(pid: number, field: "VmRSS" | "VmHWM" | "RssAnon"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1];
  if (kib === undefined) throw new Error(`no ${field} for process ${pid}`);
  return Number(kib);
}

/** CPU time (µs, user + system) of the processes this process has waited for, e.g. wrk or pgbench. */
export function waitedChildrenCpuUs(): number {
  const f = statFields(readFileSync("/proc/self/stat", "utf8"));
  return ticksUs(f[13], f[14]);
}

/**
 * CPU time (µs) of every PostgreSQL process on the machine, including backends that have exited
 * (the postmaster has waited for them: their time is in its children's times). Benchmarks run
 * one cluster at a time, so this is the benchmark's cluster.
 */
export function postgresCpuUs(): number {
  let totalUs = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    if (!stat.includes("(postgres)")) continue;
    const f = statFields(stat);
    // Only the postmaster waits for postgres processes: its children's times are theirs.
    totalUs += ticksUs(f[11], f[12], f[13], f[14]);
  }
  return totalUs;
}

/** Idle share of the machine's CPU time (idle + iowait) between two readings of /proc/stat. */
export function machineIdle(): () => number {
  const read = () =>
    readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const before = read();
  return () => {
    const d = read().map((v, i) => v - (before[i] ?? 0));
    const total = d.reduce((a, b) => a + b, 0);
    return total > 0 ? ((d[3] ?? 0) + (d[4] ?? 0)) / total : 0;
  };
}

/**
 * CPU time (µs) of one PostgreSQL cluster: its postmaster (the `postgres` process started with
 * `-p <port>`), the backends it has waited for, and its live children. Unlike postgresCpuUs it
 * leaves out other clusters on a shared machine.
 * @throws Error when no postmaster listens on `port`.
 */
export function clusterCpuUs(port: number): number {
  let postmaster: number | null = null;
  const children: number[] = [];
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      stats.set(Number(entry), statFields(stat));
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (argv[argv.indexOf("-p") + 1] === String(port) && argv.includes("-D")) postmaster ??= Number(entry);
    } catch {
      // exited meanwhile
    }
  }
  if (postmaster === null) throw new Error(`no PostgreSQL postmaster on port ${port}`);
  for (const [pid, f] of stats) if (Number(f[1]) === postmaster) children.push(pid);
  const pm = stats.get(postmaster)!;
  let totalUs = ticksUs(pm[11], pm[12], pm[13], pm[14]);
  for (const pid of children) totalUs += ticksUs(stats.get(pid)![11], stats.get(pid)![12]);
  return totalUs;
}
