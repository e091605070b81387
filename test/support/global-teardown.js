import fs from 'node:fs/promises';

export default async function globalTeardown() {
  const shared = globalThis.__cairnSharedServer;
  if (shared) {
    // Died during the run: the files on it failed; what it said is the clue.
    if (shared.process?.exitCode !== null)
      process.stderr.write(`The shared Cairn server exited during the run:\n${shared.output.slice(-20_000)}\n`);
    await shared.destroy();
  }
  const cluster = globalThis.__cairnTestCluster;
  if (!cluster) return;
  await killLeftovers(process.env.CAIRN_TEST_DATABASE_URL);
  await cluster.database.stop();
  await fs.rm(cluster.dir, { recursive: true, force: true });
}

/**
 * Service processes of this run still running: a file lost track of one (a restart's new process
 * not kept, a test that threw before its cleanup). Left alone, each would run its sweeps for ever
 * against the cluster about to go. They are found by the run's cluster in their DATABASE_URL
 * (servers of another run, on another cluster, are not touched), killed, and named, so the file
 * that left one can be found and mended.
 */
async function killLeftovers(clusterUrl) {
  const prefix = `DATABASE_URL=${clusterUrl.slice(0, clusterUrl.lastIndexOf('/') + 1)}`;
  for (const pid of await fs.readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const environ = await fs.readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    const variables = environ.split('\0');
    if (!variables.some((variable) => variable.startsWith(prefix))) continue;
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes('rest-facade/main.js')) continue;
    const dataDir = variables.find((variable) => variable.startsWith('CAIRN_DATA_DIR=')) ?? '';
    process.stderr.write(`A Cairn server of this run was still running at its end (pid ${pid}, ${dataDir}): killed.\n`);
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone meanwhile */
    }
  }
}
