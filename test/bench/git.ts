/**
 * `npm run bench:git`: git over HTTP through Cairn against the git binary alone.
 *
 * 1. Generates a ~100 MB repository (incompressible blobs, so the pack is the size) with git fast-import.
 * 2. Pushes it to Cairn (time; beside the same push to a bare repository on disk), then small
 *    pushes: how long until their events are in the outbox.
 * 3. Waits for the maintenance job, then clones through Cairn and `git clone --no-local` from the same
 *    bare repository on disk, taking turns over several rounds (a shared VM drifts), medians reported;
 *    the ratio is the median of each round's own ratio.
 * 4. Eight concurrent clones through Cairn while sampling the service's resident memory.
 * 5. Sixteen concurrent clones through Cairn beside the same sixteen through git's own HTTP server
 *    (`git http-backend` behind lighttpd, git-http-backend.ts) serving the same bare repository,
 *    taking turns over several rounds: the total wall time of each crowd, and the median of each
 *    round's ratio.
 *
 * Every clone through Cairn is measured with the service's pack cache emptied first: the pack is
 * made for it (and shared by the clones that come at once), never read back from an earlier round.
 *
 * Prints a table and a JSON line. Sizes and rounds: BENCH_REPO_MB, BENCH_ROUNDS, BENCH_CONCURRENT,
 * BENCH_CROWD, BENCH_CROWD_ROUNDS.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { adminClient } from '../support/client.js';
import { GitSandbox, remoteUrl } from '../support/git.js';
import { CairnServer, sleep } from '../support/server.js';
import { cpuShares, cpuTimes, median, pairedRatio } from './stats.js';
import { startGitHttpBackend } from './git-http-backend.js';

const REPO_MB = Number(process.env.BENCH_REPO_MB ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 8);
const SMALL_PUSHES = 10;
const CROWD = Number(process.env.BENCH_CROWD ?? 16);
const CROWD_ROUNDS = Number(process.env.BENCH_CROWD_ROUNDS ?? 3);

const mb = (bytes: number) => Math.round(bytes / 1024 / 102.4) / 10;

/** Resident memory of a process, in bytes (0 once it is gone). */
async function rss(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** Proportional set size: resident memory with pages shared between processes (the mmapped packs) split among them. */
async function pss(pid: number): Promise<number> {
  const rollup = await fs.readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const match = /^Pss:\s+(\d+) kB/m.exec(rollup);
  return match ? Number(match[1]) * 1024 : 0;
}

/** The processes below `root` now (the git processes, the git launcher, the embedded PostgreSQL). */
async function descendants(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await fs.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid) parents.set(Number(name), ppid);
  }
  const isDescendant = (pid: number): boolean => {
    for (let p = parents.get(pid); p; p = parents.get(p)) if (p === root) return true;
    return false;
  };
  return [...parents.keys()].filter(isDescendant);
}

/** Resident and proportional memory of a process's descendants (the git processes it runs). */
async function descendantsMemory(root: number): Promise<{ rss: number; pss: number }> {
  const total = { rss: 0, pss: 0 };
  for (const pid of await descendants(root)) {
    total.rss += await rss(pid);
    total.pss += await pss(pid);
  }
  return total;
}

const TICK_MS = 1000 / 100; // USER_HZ: /proc counts CPU time in hundredths of a second

/**
 * CPU time (ms) a process used, itself and its children once they have exited and been waited for
 * (`onlyChildren`: its children's alone).
 */
async function cpuMs(pid: number, onlyChildren = false): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (onlyChildren ? [13, 14] : [11, 12, 13, 14]).reduce((sum, i) => sum + Number(fields[i] ?? 0), 0) * TICK_MS;
}

/**
 * CPU time (ms) used so far by a process and everything below it, living or exited: the difference
 * of two readings is what the tree spent between them. It is swayed less than wall time by what
 * else runs on a busy machine, so it splits a clone's cost between git's client and the server.
 */
async function treeCpuMs(root: number): Promise<number> {
  let total = await cpuMs(root);
  for (const pid of await descendants(root)) total += await cpuMs(pid);
  return total;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

/** fast-import from a stream of random blobs: REPO_MB in 100 KiB files, five per commit. */
async function generateRepository(git: GitSandbox, dir: string): Promise<void> {
  await git.git(['init', '--quiet', '--bare', dir]);
  const child = spawn('git', ['fast-import', '--quiet'], { cwd: dir, env: git.env, stdio: ['pipe', 'ignore', 'inherit'] });
  const done = new Promise<void>((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`fast-import exited ${code}`)))),
  );
  const write = (chunk: string | Buffer) =>
    child.stdin.write(chunk) ? Promise.resolve() : new Promise<void>((resolve) => child.stdin.once('drain', () => resolve()));
  const files = Math.ceil((REPO_MB * 1024) / 100);
  for (let i = 0; i < files; i += 5) {
    const commit = i / 5 + 1;
    const message = `commit ${commit}\n`;
    await write(
      `commit refs/heads/main\nmark :${commit}\ncommitter Bench <bench@example.test> ${1_700_000_000 + commit} +0000\n` +
        `data ${message.length}\n${message}${commit > 1 ? `from :${commit - 1}\n` : ''}`,
    );
    for (let f = i; f < Math.min(i + 5, files); f++) {
      const blob = randomBytes(100 * 1024);
      await write(`M 100644 inline data/${Math.floor(f / 100)}/file-${f}.bin\ndata ${blob.length}\n`);
      await write(blob);
      await write('\n');
    }
  }
  child.stdin.end();
  await done;
}

const root = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-bench-git-'));
const git = await GitSandbox.create();
const server = await CairnServer.start({ embedded: true, env: { LOG_LEVEL: 'info' } });
let watching = false;
try {
  const admin = adminClient(server);
  const repo = (await admin.post('/repos', { name: 'bench' })).body as { id: string };
  const url = remoteUrl(server, 'admin', 'bench', server.adminToken);
  const onDisk = path.join(server.dataDir, 'repositories', `${repo.id}.git`);
  const pid = server.process!.pid!;
  const rssAtStart = await rss(pid); // before any git traffic
  let rssPeakOverall = rssAtStart;
  watching = true;
  const watcher = (async () => {
    while (watching) {
      rssPeakOverall = Math.max(rssPeakOverall, await rss(pid));
      await sleep(100);
    }
  })();

  const source = path.join(root, 'source.git');
  const generated = await timed(() => generateRepository(git, source));
  const { stdout: sizeLine } = await git.run(['count-objects', '-v'], { cwd: source });
  const packKb = Number(/size-pack: (\d+)/.exec(sizeLine)?.[1] ?? 0);
  console.log(`generated ${mb(packKb * 1024)} MB pack in ${(generated.ms / 1000).toFixed(1)} s`);

  const cpuBefore = await cpuTimes();

  // The initial push: the whole pack through Cairn, and the same push into a bare repository on disk
  // (git's own file transport: what the pack costs without HTTP, authentication and event recording).
  const bigPush = await timed(() => git.git(['push', '--quiet', url, 'main'], { cwd: source }));
  const localTarget = path.join(root, 'local-target.git');
  await git.git(['init', '--quiet', '--bare', localTarget]);
  const localPush = await timed(() => git.git(['push', '--quiet', `file://${localTarget}`, 'main'], { cwd: source }));
  const db = new pg.Client({ connectionString: await databaseUrlOf(server) });
  await db.connect();

  // Small pushes: push start → event row written (the service records it before answering).
  const work = path.join(root, 'work');
  await git.git(['clone', '--quiet', '--no-checkout', '--depth', '1', url, work]);
  const pushToEvent: number[] = [];
  const pushWall: number[] = [];
  for (let i = 0; i < SMALL_PUSHES; i++) {
    await git.git(['commit', '--quiet', '--allow-empty', '-m', `small ${i}`], { cwd: work });
    const startedAt = Date.now();
    const push = await timed(() => git.git(['push', '--quiet', 'origin', 'HEAD:main'], { cwd: work }));
    const { rows } = await db.query<{ created_at: Date }>(
      "select created_at from domain_events where repository_id = $1 and type = 'push' order by id desc limit 1",
      [repo.id],
    );
    pushWall.push(push.ms);
    pushToEvent.push(rows[0]!.created_at.getTime() - startedAt);
  }
  await db.end();
  const processed = server.logs().filter((line) => line.msg === 'push processed' && line.repositoryId === repo.id);
  const recordMs = processed.slice(1).map((line) => Number(line.recordMs));
  const bigRecordMs = Number(processed[0]?.recordMs);

  // Clones are measured on the maintained repository (bitmaps), the state it settles in.
  const deadline = Date.now() + 180_000;
  while (!server.logs().some((line) => line.msg === 'repository maintained' && line.repositoryId === repo.id)) {
    if (Date.now() > deadline) throw new Error('maintenance did not run within 3 minutes');
    await sleep(500);
  }

  const cloneThrough = (dest: string) => git.git(['clone', '--quiet', '--no-checkout', url, dest]);
  // Every measured clone through Cairn starts with an empty pack cache: it makes its pack (the
  // sixteen at once share one), as the first clone of a repository's new state does.
  const packCache = path.join(server.dataDir, 'tmp', 'pack-cache');
  const emptyPackCache = async () => {
    for (const name of await fs.readdir(packCache)) await fs.rm(path.join(packCache, name), { force: true });
  };
  const cloneLocal = (dest: string) => git.git(['clone', '--quiet', '--no-checkout', '--no-local', onDisk, dest]);
  const samples = { cairn: [] as number[], local: [] as number[] };
  // CPU of each clone: the git client (this process's children, waited for) and the service with everything it runs.
  const cloneCpu = {
    cairn: { client: [] as number[], service: [] as number[] },
    local: { client: [] as number[], service: [] as number[] },
  };
  for (let round = -1; round < ROUNDS; round++) {
    // Alternate who goes first; round -1 warms the page cache and is not counted.
    const order = round % 2 === 0 ? (['cairn', 'local'] as const) : (['local', 'cairn'] as const);
    for (const kind of order) {
      const dest = path.join(root, `clone-${kind}`);
      await emptyPackCache();
      const [clientBefore, serviceBefore] = [await cpuMs(process.pid, true), await treeCpuMs(pid)];
      const { ms } = await timed(() => (kind === 'cairn' ? cloneThrough(dest) : cloneLocal(dest)));
      if (round >= 0) {
        samples[kind].push(ms);
        cloneCpu[kind].client.push((await cpuMs(process.pid, true)) - clientBefore);
        cloneCpu[kind].service.push((await treeCpuMs(pid)) - serviceBefore);
      }
      await fs.rm(dest, { recursive: true, force: true });
    }
  }
  // The same clone again within the pack cache's five minutes: its pack is sent as made (the last round's).
  const warmSamples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const dest = path.join(root, 'clone-warm');
    warmSamples.push((await timed(() => cloneThrough(dest))).ms);
    await fs.rm(dest, { recursive: true, force: true });
  }

  // Memory during concurrent clones.
  await sleep(1000);
  const rssBefore = await rss(pid);
  let rssPeak = rssBefore;
  let childrenPeak = 0;
  let childrenPssPeak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rssPeak = Math.max(rssPeak, await rss(pid));
      const children = await descendantsMemory(pid);
      childrenPeak = Math.max(childrenPeak, children.rss);
      childrenPssPeak = Math.max(childrenPssPeak, children.pss);
      await sleep(50);
    }
  })();
  await emptyPackCache();
  const crowd = await timed(() => Promise.all(Array.from({ length: CONCURRENT }, (_, i) => cloneThrough(path.join(root, `crowd-${i}`)))));
  sampling = false;
  watching = false;
  await Promise.all([sampler, watcher]);
  await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => fs.rm(path.join(root, `crowd-${i}`), { recursive: true, force: true })));

  // Sixteen clones at once, through Cairn and through git http-backend behind lighttpd, in turns.
  const crowdWalls = { cairn: [] as number[], backend: [] as number[] };
  const backend = await startGitHttpBackend(root, path.dirname(onDisk));
  if (backend) {
    try {
      const source = { cairn: url, backend: `${backend.url}/${path.basename(onDisk)}` };
      for (let round = -1; round < CROWD_ROUNDS; round++) {
        // Alternate who goes first; round -1 warms up and is not counted.
        const order = round % 2 === 0 ? (['cairn', 'backend'] as const) : (['backend', 'cairn'] as const);
        for (const kind of order) {
          const dests = Array.from({ length: CROWD }, (_, i) => path.join(root, `crowd-${kind}-${i}`));
          await emptyPackCache();
          const { ms } = await timed(() =>
            Promise.all(dests.map((dest) => git.git(['clone', '--quiet', '--no-checkout', source[kind], dest]))),
          );
          if (round >= 0) crowdWalls[kind].push(ms);
          await Promise.all(dests.map((dest) => fs.rm(dest, { recursive: true, force: true })));
        }
      }
    } finally {
      await backend.stop();
    }
  }
  const crowdRatio = backend ? Math.round(100 * pairedRatio(crowdWalls.cairn, crowdWalls.backend)) / 100 : null;

  const cpu = cpuShares(cpuBefore, await cpuTimes());
  const cpuMedians = (kind: 'cairn' | 'local') => ({ client: median(cloneCpu[kind].client), service: median(cloneCpu[kind].service) });
  const cloneCpuMs = { cairn: cpuMedians('cairn'), local: cpuMedians('local') };
  const cpuTotal = (kind: 'cairn' | 'local') => median(cloneCpu[kind].client.map((client, i) => client + cloneCpu[kind].service[i]!));
  const cairnMs = median(samples.cairn);
  const localMs = median(samples.local);
  const results = {
    bench: 'git',
    repositoryMb: mb(packKb * 1024),
    cpus: os.cpus().length,
    cpuIdle: cpu.idle,
    cpuSteal: cpu.steal,
    initialPushMs: Math.round(bigPush.ms),
    initialPushLocalMs: Math.round(localPush.ms),
    initialPushRecordMs: bigRecordMs,
    smallPushMedianMs: Math.round(median(pushWall)),
    pushStartToEventMedianMs: median(pushToEvent),
    receiveExitToEventMedianMs: median(recordMs),
    cloneCairnMedianMs: Math.round(cairnMs),
    cloneLocalMedianMs: Math.round(localMs),
    cloneRatio: Math.round(100 * pairedRatio(samples.cairn, samples.local)) / 100,
    cloneMs: { cairn: Math.round(cairnMs), local: Math.round(localMs) },
    cloneCpuMs,
    cloneCpuRatio: Math.round((100 * cpuTotal('cairn')) / cpuTotal('local')) / 100,
    cloneSamples: { cairn: samples.cairn.map(Math.round), local: samples.local.map(Math.round) },
    /** The same clone through Cairn with its pack already in the pack cache (median ms). */
    cloneCachedMedianMs: Math.round(median(warmSamples)),
    concurrentClones: CONCURRENT,
    concurrentWallMs: Math.round(crowd.ms),
    serviceRssAtStartMb: mb(rssAtStart),
    serviceRssPeakOverallMb: mb(Math.max(rssPeakOverall, rssPeak)),
    serviceRssBeforeMb: mb(rssBefore),
    serviceRssPeakMb: mb(rssPeak),
    /** The service's resident memory at its highest during the concurrent clones (the issue's figure). */
    rssPeakMb: mb(rssPeak),
    serviceRssGrowthMb: mb(rssPeak - rssBefore),
    gitProcessesRssPeakMb: mb(childrenPeak),
    gitProcessesPssPeakMb: mb(childrenPssPeak),
    crowdClones: CROWD,
    crowdCairnMedianMs: backend ? Math.round(median(crowdWalls.cairn)) : null,
    crowdBackendMedianMs: backend ? Math.round(median(crowdWalls.backend)) : null,
    /** Median of each round's ratio of the crowd's wall time through Cairn over through git http-backend (floor ≤ 1.0). */
    crowdVsHttpBackend: crowdRatio,
  };

  console.log(
    `\nbench:git — ${results.repositoryMb} MB repository, ${ROUNDS} rounds, ${results.cpus} CPUs, ` +
      `CPU idle ${(100 * cpu.idle).toFixed(0)}% / stolen by the hypervisor ${(100 * cpu.steal).toFixed(0)}% during the run\n`,
  );
  console.log(
    `initial push (whole pack)          ${(results.initialPushMs / 1000).toFixed(1)} s (events recorded in ${bigRecordMs} ms)   ` +
      `vs git push to a bare repository on disk ${(results.initialPushLocalMs / 1000).toFixed(1)} s`,
  );
  console.log(`small push, git push wall time     ${results.smallPushMedianMs} ms median`);
  console.log(`  push start → event in outbox     ${results.pushStartToEventMedianMs} ms median`);
  console.log(`  receive-pack exit → event        ${results.receiveExitToEventMedianMs} ms median`);
  console.log(
    `clone through Cairn                ${(cairnMs / 1000).toFixed(2)} s median   vs git clone --no-local ${(localMs / 1000).toFixed(2)} s` +
      `   ratio ${results.cloneRatio} (floor ≤ 1.5)`,
  );
  console.log(`  the same clone, pack cached      ${(results.cloneCachedMedianMs / 1000).toFixed(2)} s median`);
  console.log(
    `  CPU per clone (median ms)        through Cairn: git client ${cloneCpuMs.cairn.client} + service ${cloneCpuMs.cairn.service}` +
      `   on disk: git ${cloneCpuMs.local.client}   ratio ${results.cloneCpuRatio} (less swayed by other load than wall time)`,
  );
  console.log(
    `${CONCURRENT} concurrent clones              ${(crowd.ms / 1000).toFixed(1)} s; service RSS ${results.serviceRssBeforeMb} → ` +
      `${results.serviceRssPeakMb} MB (+${results.serviceRssGrowthMb} MB, floor < 100); git processes peak ` +
      `${results.gitProcessesRssPeakMb} MB RSS, ${results.gitProcessesPssPeakMb} MB PSS (shared pack pages counted once)`,
  );
  console.log(
    backend
      ? `${CROWD} concurrent clones, total wall  through Cairn ${(results.crowdCairnMedianMs! / 1000).toFixed(1)} s median   ` +
          `vs git http-backend behind lighttpd ${(results.crowdBackendMedianMs! / 1000).toFixed(1)} s   ratio ${crowdRatio} (floor ≤ 1.0)`
      : `${CROWD} concurrent clones beside git http-backend: skipped (no lighttpd)`,
  );
  console.log(
    `service RSS over the whole run          ${results.serviceRssAtStartMb} MB at start (before any git traffic), ` +
      `${results.serviceRssPeakOverallMb} MB at most`,
  );
  console.log(`\n${JSON.stringify(results)}`);
} finally {
  watching = false;
  await server.destroy();
  await git.cleanup();
  await fs.rm(root, { recursive: true, force: true });
}

/** The embedded database of a benchmark server, from its start-up log. */
async function databaseUrlOf(server: CairnServer): Promise<string> {
  const ready = server.logs().find((line) => line.msg === 'embedded PostgreSQL ready');
  const password = (await fs.readFile(path.join(server.dataDir, 'postgres.password'), 'utf8')).trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${ready!.port}/cairn`;
}
