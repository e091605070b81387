import fs from 'node:fs/promises';
import path from 'node:path';
import { createUser, adminClient } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { TreeGuard } from './support/process-tree.js';
import { CairnServer } from './support/server.js';

/**
 * The bounds on git processes (CAIRN_GIT_MEMORY_LIMIT, 1 GiB by default) must not break legitimate
 * work: git maps pack files into its address space, and a repository near the 2 GB push limit is
 * pushed and cloned under them. Four files of 470 MB of random bytes (nothing to compress or
 * delta): a pack of some 1.9 GB each way.
 */
const FILES = 4;
const FILE_BYTES = 470 * 1024 * 1024;

let server: CairnServer;
let git: GitSandbox;
let guard: TreeGuard;

beforeAll(async () => {
  [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
  guard = new TreeGuard(server.process!.pid!, 4 * 1024 ** 3);
});
afterAll(async () => {
  guard.stop();
  await Promise.all([server.destroy(), git.cleanup()]);
});

/** Random bytes into a file, a MiB at a time. */
async function randomFile(file: string, bytes: number): Promise<void> {
  const handle = await fs.open(file, 'w');
  try {
    const { randomFillSync } = await import('node:crypto');
    const chunk = Buffer.alloc(1024 * 1024);
    for (let written = 0; written < bytes; written += chunk.length)
      await handle.write(randomFillSync(chunk), 0, Math.min(chunk.length, bytes - written));
  } finally {
    await handle.close();
  }
}

test('a repository near the 2 GB push limit is pushed and cloned within the memory bound', async () => {
  const alice = await createUser(adminClient(server), 'alice');
  await alice.post('/repos', { name: 'large' });
  const work = await git.init('large');
  // Client side only: store the files as they are (no compression, no delta search), streamed into a pack.
  const fast = ['-c', 'core.bigFileThreshold=100m', '-c', 'core.compression=0', '-c', 'pack.compression=0'];
  for (let i = 0; i < FILES; i++) {
    await randomFile(path.join(work, `blob-${i}.bin`), FILE_BYTES);
    await git.git([...fast, 'add', `blob-${i}.bin`], { cwd: work });
    await fs.rm(path.join(work, `blob-${i}.bin`));
  }
  await git.git(['commit', '--quiet', '-m', 'large'], { cwd: work });

  let started = performance.now();
  const pushed = await git.run([...fast, 'push', '--quiet', remoteUrl(server, 'alice', 'large', alice.token), 'main'], { cwd: work });
  const pushMs = performance.now() - started;
  expect(pushed.stderr).toBe('');
  expect(pushed.code).toBe(0);

  started = performance.now();
  const clone = git.path('large-clone.git');
  const cloned = await git.run(['clone', '--quiet', '--bare', remoteUrl(server, 'alice', 'large', alice.token), clone]);
  const cloneMs = performance.now() - started;
  expect(cloned.stderr).toBe('');
  expect(cloned.code).toBe(0);
  const sizes = (await git.git(['cat-file', '--batch-check=%(objectsize)', '--batch-all-objects'], { cwd: clone }))
    .trim()
    .split('\n')
    .map(Number);
  expect(sizes.filter((size) => size === FILE_BYTES)).toHaveLength(FILES);
  console.log(`~1.9 GB: push ${Math.round(pushMs / 1000)} s, clone ${Math.round(cloneMs / 1000)} s, service tree peak ${guard.peakMb} MB`);
  expect(guard.exceeded).toBe(false);
}, 600_000);
