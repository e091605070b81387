/**
 * `npm run bench:startup`: start-up and memory, the way a user runs the service.
 *  1. `npm start` on an existing data dir (made by a first start) until `/readyz` answers 200,
 *     BENCH_STARTS (5) times; the median is reported (npm's own start-up included).
 *  2. The resident memory (VmRSS) of the service process idle 5 s after its last start, and after a
 *     load (REST reads, issue creation and GraphQL reads, 32 connections each): as the load ends,
 *     and 5 s later, once the service has given back what it can while quiet.
 * Prints a table and a JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort, sleep } from '../support/server.js';
import { median } from './stats.js';

const STARTS = Number(process.env.BENCH_STARTS ?? 5);
const LOAD_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

interface Started {
  npm: ChildProcess;
  ms: number;
}

async function start(dataDir: string, port: number): Promise<Started> {
  const started = performance.now();
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: {
      ...process.env,
      CAIRN_DATA_DIR: dataDir,
      PORT: String(port),
      CAIRN_RATE_LIMIT: '100000000',
      CAIRN_RATE_LIMIT_CREATE: '100000000',
    },
    stdio: 'ignore',
    detached: true, // its own process group: stopping it stops npm and the service alike
  });
  for (;;) {
    if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return { npm, ms: performance.now() - started };
    await sleep(10);
  }
}

async function stop({ npm }: Started): Promise<void> {
  const exited = new Promise((resolve) => npm.once('exit', resolve));
  process.kill(-npm.pid!, 'SIGTERM');
  await exited;
  await sleep(300); // the service's own exit, after npm's
}

/** The service is the node process in npm's process group (npm runs `exec node …`). */
async function serviceRss(npm: ChildProcess): Promise<number> {
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmdline = await fs.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (Number(fields[2]) === npm.pid && cmdline.includes('rest-facade/main.js')) {
      const status = await fs.readFile(`/proc/${entry}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
    }
  }
  throw new Error('service process not found');
}

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-bench-start-'));
const port = await freePort();
try {
  await stop(await start(dataDir, port)); // the first start initialises the database
  const times: number[] = [];
  let running: Started | null = null;
  for (let i = 0; i < STARTS; i++) {
    if (running) await stop(running);
    running = await start(dataDir, port);
    times.push(running.ms);
  }
  await sleep(5_000);
  const idleMb = await serviceRss(running!.npm);

  const url = `http://127.0.0.1:${port}`;
  const token = (await fs.readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const created = await fetch(`${url}/repos`, { method: 'POST', headers, body: JSON.stringify({ name: 'load', auto_init: true }) });
  const repo = ((await created.json()) as { id: string }).id;
  const load = (options: autocannon.Options) => autocannon({ connections: 32, duration: LOAD_SECONDS, ...options });
  await load({ url: `${url}/repos/${repo}`, headers });
  await load({ url: `${url}/repos/${repo}/issues`, method: 'POST', headers, body: JSON.stringify({ title: 'load' }) });
  await load({ url: `${url}/repos/${repo}/issues`, headers });
  await load({
    url: `${url}/graphql`,
    method: 'POST',
    headers,
    body: JSON.stringify({ query: `{ repository(id: "${repo}") { name openIssuesCount issues(limit: 30) { nodes { number title } } } }` }),
  });
  const endOfLoadMb = await serviceRss(running!.npm);
  await sleep(5_000);
  const afterLoadMb = await serviceRss(running!.npm);
  await stop(running!);

  const startMs = Math.round(median(times));
  console.log(`\nbench:startup — ${os.cpus().length} CPUs, ${STARTS} starts on an existing data dir\n`);
  console.log(`npm start → /readyz 200   median ${startMs} ms   (each: ${times.map((t) => Math.round(t)).join(', ')} ms)`);
  console.log(
    `service RSS               idle ${idleMb.toFixed(0)} MB   as the load ends ${endOfLoadMb.toFixed(0)} MB   5 s after it ${afterLoadMb.toFixed(0)} MB`,
  );
  console.log(
    `\n${JSON.stringify({ bench: 'startup', startMs, starts: times.map(Math.round), idleMb: Math.round(idleMb), endOfLoadMb: Math.round(endOfLoadMb), afterLoadMb: Math.round(afterLoadMb) })}`,
  );
} finally {
  await fs.rm(dataDir, { recursive: true, force: true }).catch(() => undefined);
}
