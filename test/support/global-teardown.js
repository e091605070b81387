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
  await cluster.database.stop();
  await fs.rm(cluster.dir, { recursive: true, force: true });
}
