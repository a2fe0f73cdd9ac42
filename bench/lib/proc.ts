/**
 * Per-process readings from Linux /proc for benchmarks: CPU time (user and system, all threads)
 * and resident set size.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

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

/** Parent pid and CPU time of `pid` from /proc/<pid>/stat. @throws when the process is gone. */
export function procStat(pid: number): CpuTime & { ppid: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesized command name (which may contain spaces): state ppid ...
  // utime and stime are fields 14 and 15 of the whole line.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const us = (ticks: string | undefined) => (Number(ticks) / clockTicks) * 1e6;
  return { ppid: Number(f[1]), userUs: us(f[11]), systemUs: us(f[12]) };
}

/**
 * A process's CPU time so far (resolution one clock tick, 10 ms: read it over many calls).
 */
export function processCpu(pid: number): CpuTime {
  const { userUs, systemUs } = procStat(pid);
  return { userUs, systemUs };
}

/** User + system CPU time of process `pid` in seconds. */
export function cpuSeconds(pid: number): number {
  const { userUs, systemUs } = procStat(pid);
  return (userUs + systemUs) / 1e6;
}

/** Resident set size of process `pid` in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) * 1024;
}
