import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createUser, adminClient } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { TreeGuard } from './support/process-tree.js';
import { CairnServer } from './support/server.js';

/**
 * The bounds on git processes (CAIRN_GIT_MEMORY_LIMIT, 1 GiB by default) must not break legitimate
 * work: git maps pack files into its address space, and a repository near the 2 GB push limit is
 * pushed and fetched whole under them. Four files of 470 MB stored uncompressed, none a delta of
 * another: a pack of some 1.9 GB each way.
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

/** A file of `bytes` that shares no long run with another: a MiB of random bytes, repeated. */
async function distinctFile(file: string, bytes: number): Promise<void> {
  const { randomBytes } = await import('node:crypto');
  const chunk = randomBytes(1024 * 1024);
  const handle = await fs.open(file, 'w');
  try {
    for (let written = 0; written < bytes; written += chunk.length) await handle.write(chunk, 0, Math.min(chunk.length, bytes - written));
  } finally {
    await handle.close();
  }
}

/**
 * What `git clone` asks of upload-pack (protocol v0: want, done), read to its end as it streams and
 * checked by its trailing SHA-1, without indexing it: git's client would spend half a minute of CPU
 * on that, and the bound under test is the server's.
 */
async function fetchWhole(url: string, token: string, sha: string): Promise<{ packBytes: number; objects: number }> {
  const pktLine = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
  const answer = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}`,
      'content-type': 'application/x-git-upload-pack-request',
    },
    body: `${pktLine(`want ${sha} ofs-delta\n`)}0000${pktLine('done\n')}`,
  });
  expect(answer.status).toBe(200);
  const nak = '0008NAK\n';
  const hash = createHash('sha1');
  let head = Buffer.alloc(0);
  let tail = Buffer.alloc(0); // the last 20 bytes seen: the pack's checksum once the stream ends
  let packBytes = 0;
  for await (const piece of answer.body as unknown as AsyncIterable<Uint8Array>) {
    let chunk = Buffer.from(piece);
    if (packBytes === 0 && head.length < nak.length + 12) {
      head = Buffer.concat([head, chunk]);
      if (head.length < nak.length + 12) continue;
      expect(head.subarray(0, nak.length).toString('latin1')).toBe(nak);
      chunk = head.subarray(nak.length);
    }
    const joined = Buffer.concat([tail, chunk]);
    hash.update(joined.subarray(0, Math.max(0, joined.length - 20)));
    tail = joined.subarray(Math.max(0, joined.length - 20));
    packBytes += chunk.length;
  }
  const pack = head.subarray(nak.length);
  expect(pack.subarray(0, 4).toString('latin1')).toBe('PACK');
  expect(hash.digest('hex')).toBe(tail.toString('hex'));
  return { packBytes, objects: pack.readUInt32BE(8) };
}

test('a repository near the 2 GB push limit is pushed and fetched whole within the memory bound', async () => {
  const alice = await createUser(adminClient(server), 'alice');
  await alice.post('/repos', { name: 'large' });
  const work = await git.init('large');
  // Client side only: store the files as they are (no compression, no delta search), streamed into a pack.
  const fast = ['-c', 'core.bigFileThreshold=100m', '-c', 'core.compression=0', '-c', 'pack.compression=0'];
  for (let i = 0; i < FILES; i++) {
    await distinctFile(path.join(work, `blob-${i}.bin`), FILE_BYTES);
    await git.git([...fast, 'add', `blob-${i}.bin`], { cwd: work });
    await fs.rm(path.join(work, `blob-${i}.bin`));
  }
  await git.git(['commit', '--quiet', '-m', 'large'], { cwd: work });
  const sha = (await git.git(['rev-parse', 'HEAD'], { cwd: work })).trim();

  let started = performance.now();
  const pushed = await git.run([...fast, 'push', '--quiet', remoteUrl(server, 'alice', 'large', alice.token), 'main'], { cwd: work });
  const pushMs = performance.now() - started;
  expect(pushed.stderr).toBe('');
  expect(pushed.code).toBe(0);

  started = performance.now();
  const fetched = await fetchWhole(`http://127.0.0.1:${server.port}/alice/large.git/git-upload-pack`, alice.token, sha);
  const fetchMs = performance.now() - started;
  expect(fetched.objects).toBe(FILES + 2); // the blobs, their tree, the commit
  expect(fetched.packBytes).toBeGreaterThan(FILES * FILE_BYTES);
  console.log(
    `~1.9 GB: push ${Math.round(pushMs / 1000)} s, fetch of ${Math.round(fetched.packBytes / 1024 ** 2)} MiB ${Math.round(fetchMs / 1000)} s, service tree peak ${guard.peakMb} MB`,
  );
  expect(guard.exceeded).toBe(false);
}, 600_000);
