import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Shared arithmetic of the benchmark scripts. */

/** One target's figures from an autocannon run (medians over the rounds; errors summed). */
export interface Throughput {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

/**
 * The median of round-by-round ratios `measured[i] / baseline[i]`, where the two of a round ran back
 * to back: on a shared VM whose speed drifts between rounds, the drift cancels within a pair.
 */
export const pairedRatio = (measured: number[], baseline: number[]) => median(measured.map((value, round) => value / baseline[round]!));

/** Nearest-rank percentile (p in 0-100). */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
};

/** CPU time counters (user, nice, system, idle, iowait, irq, softirq, steal, …) from /proc/stat. */
export async function cpuTimes(): Promise<number[]> {
  const line = (await fs.readFile('/proc/stat', 'utf8').catch(() => 'cpu 0')).split('\n')[0]!;
  return line.trim().split(/\s+/).slice(1).map(Number);
}

/** Shares of CPU time between two readings that were idle and that the hypervisor stole. */
export const cpuShares = (before: number[], after: number[]) => {
  const delta = after.map((v, i) => v - (before[i] ?? 0));
  const total = delta.reduce((sum, v) => sum + v, 0) || 1;
  return { idle: (delta[3] ?? 0) / total, steal: (delta[7] ?? 0) / total };
};

/**
 * CPU time (ms) used so far by the service process and by its descendants (the embedded
 * PostgreSQL's postmaster and backends, git), from /proc: the cost of a request, which a busy
 * shared machine changes much less than the throughput.
 */
export async function cpuUsed(root: number): Promise<{ service: number; postgres: number }> {
  const tick = 1000 / 100; // USER_HZ
  const stats = new Map<number, { parent: number; ms: number }>();
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => null);
    if (!stat) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // after "pid (comm) "
    // state ppid … utime (14th field overall, 12th here) stime; children that exited count in cutime/cstime
    const ms = (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * tick;
    stats.set(Number(entry), { parent: Number(fields[1]), ms });
  }
  const children = new Map<number, number[]>();
  for (const [pid, { parent }] of stats) children.set(parent, [...(children.get(parent) ?? []), pid]);
  let postgres = 0;
  const stack = [...(children.get(root) ?? [])];
  while (stack.length) {
    const pid = stack.pop()!;
    postgres += stats.get(pid)?.ms ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return { service: stats.get(root)?.ms ?? 0, postgres };
}

/**
 * The environment that makes the service sample its CPU from start to exit and write a .cpuprofile
 * into `dir` (a bench's BENCH_CPU_PROF, see cpu-profile.ts); nothing when no directory is given.
 */
export async function cpuProfileEnv(dir: string | undefined): Promise<Record<string, string>> {
  if (!dir) return {};
  const resolved = path.resolve(dir);
  await fs.mkdir(resolved, { recursive: true });
  const preload = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), 'cpu-profile.js')).href;
  return { NODE_OPTIONS: `--import=${preload}`, CAIRN_BENCH_CPU_PROF_DIR: resolved };
}
