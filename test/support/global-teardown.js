import fs from 'node:fs/promises';

export default async function globalTeardown() {
  const cluster = globalThis.__cairnTestCluster;
  if (!cluster) return;
  await cluster.database.stop();
  await fs.rm(cluster.dir, { recursive: true, force: true });
}
