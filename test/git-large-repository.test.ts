import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { createDeflate } from 'node:zlib';
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

const pktLine = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;

/** A blob of `bytes` that shares no long run with another: a MiB of its own random bytes, repeated. */
class DistinctBlob {
  private readonly chunk = randomBytes(1024 * 1024);
  readonly id: string;

  constructor(readonly bytes: number) {
    const hash = createHash('sha1').update(`blob ${bytes}\0`);
    for (const piece of this.pieces()) hash.update(piece);
    this.id = hash.digest('hex');
  }

  *pieces(): Generator<Buffer> {
    for (let written = 0; written < this.bytes; written += this.chunk.length)
      yield this.chunk.subarray(0, Math.min(this.chunk.length, this.bytes - written));
  }
}

/** A pack entry's header: its type and inflated size (git's pack format, version 2). */
function entryHeader(type: 'commit' | 'tree' | 'blob', size: number): Buffer {
  const bytes = [({ commit: 1, tree: 2, blob: 3 }[type] << 4) | (size & 0x0f)];
  for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128)) {
    bytes[bytes.length - 1]! |= 0x80;
    bytes.push(rest & 0x7f);
  }
  return Buffer.from(bytes);
}

/** zlib at level 0, as git stores objects with pack.compression=0: the stored bytes pass through. */
async function* stored(pieces: Iterable<Buffer>): AsyncGenerator<Buffer> {
  const deflate = createDeflate({ level: 0, chunkSize: 1024 * 1024 });
  const written = (async () => {
    for (const piece of pieces) if (!deflate.write(piece)) await once(deflate, 'drain');
    deflate.end();
  })();
  for await (const out of deflate) yield out as Buffer;
  await written;
}

/**
 * The pack `git push` sends for one commit of these blobs at the root, with git's settings for large
 * files (no delta search, no compression), streamed as it is made: its blobs are never on the
 * client's disk, and no client git hashes 1.9 GB three times over (git's collision-detecting SHA-1
 * runs at a fraction of the speed of the one here). Returns the commit and the pack.
 */
function packOf(blobs: DistinctBlob[]): { commit: string; pack: AsyncGenerator<Buffer> } {
  const objectId = (type: string, body: Buffer) => createHash('sha1').update(`${type} ${body.length}\0`).update(body).digest('hex');
  const tree = Buffer.concat(blobs.map((blob, i) => Buffer.concat([Buffer.from(`100644 blob-${i}.bin\0`), Buffer.from(blob.id, 'hex')])));
  const treeId = objectId('tree', tree);
  const who = 'alice <alice@example.com> 1764000000 +0000';
  const commitBody = Buffer.from(`tree ${treeId}\nauthor ${who}\ncommitter ${who}\n\nlarge\n`);
  async function* pack(): AsyncGenerator<Buffer> {
    const checksum = createHash('sha1');
    const out = (piece: Buffer) => (checksum.update(piece), piece);
    const head = Buffer.alloc(12);
    head.write('PACK', 0, 'latin1');
    head.writeUInt32BE(2, 4);
    head.writeUInt32BE(blobs.length + 2, 8);
    yield out(head);
    for (const [type, body] of [
      ['commit', commitBody],
      ['tree', tree],
    ] as const) {
      yield out(entryHeader(type, body.length));
      for await (const piece of stored([body])) yield out(piece);
    }
    for (const blob of blobs) {
      yield out(entryHeader('blob', blob.bytes));
      for await (const piece of stored(blob.pieces())) yield out(piece);
    }
    yield checksum.digest();
  }
  return { commit: objectId('commit', commitBody), pack: pack() };
}

/** A POST to git's `service` at `url` as the token's holder, its body still to write, and its answer to come. */
function gitService(url: string, token: string, service: 'receive-pack' | 'upload-pack') {
  const request = http.request(url, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}`,
      'content-type': `application/x-git-${service}-request`,
    },
  });
  return { request, answered: once(request, 'response') as Promise<[http.IncomingMessage]> };
}

/** Pushes `commit` as the new branch main with its pack, as git's receive-pack protocol has it; returns the report. */
async function pushPack(
  url: string,
  token: string,
  commit: string,
  pack: AsyncGenerator<Buffer>,
): Promise<{ status: number; report: string }> {
  const { request, answered } = gitService(url, token, 'receive-pack');
  request.write(`${pktLine(`${'0'.repeat(40)} ${commit} refs/heads/main\0report-status\n`)}0000`);
  for await (const piece of pack) if (!request.write(piece)) await once(request, 'drain');
  request.end();
  const [response] = await answered;
  let report = '';
  for await (const piece of response) report += String(piece);
  return { status: response.statusCode!, report };
}

/**
 * What `git clone` asks of upload-pack (protocol v0: want, done), read to its end as it streams and
 * checked by its trailing SHA-1, without indexing it: git's client would spend half a minute of CPU
 * on that, and the bound under test is the server's.
 */
async function fetchWhole(url: string, token: string, sha: string): Promise<{ packBytes: number; objects: number }> {
  const { request, answered } = gitService(url, token, 'upload-pack');
  request.end(`${pktLine(`want ${sha} ofs-delta\n`)}0000${pktLine('done\n')}`);
  const [answer] = await answered;
  expect(answer.statusCode).toBe(200);
  const nak = '0008NAK\n';
  const hash = createHash('sha1');
  let head = Buffer.alloc(0);
  let tail = Buffer.alloc(0); // the last 20 bytes seen, not yet hashed: the pack's checksum once the stream ends
  let packBytes = 0;
  for await (const piece of answer as AsyncIterable<Buffer>) {
    let chunk = piece;
    if (packBytes === 0 && head.length < nak.length + 12) {
      head = Buffer.concat([head, chunk]);
      if (head.length < nak.length + 12) continue;
      expect(head.subarray(0, nak.length).toString('latin1')).toBe(nak);
      chunk = head.subarray(nak.length);
    }
    packBytes += chunk.length;
    if (chunk.length < 20) chunk = Buffer.concat([tail, chunk]);
    else hash.update(tail);
    const keep = Math.max(0, chunk.length - 20);
    hash.update(chunk.subarray(0, keep));
    tail = Buffer.from(chunk.subarray(keep));
  }
  const pack = head.subarray(nak.length);
  expect(pack.subarray(0, 4).toString('latin1')).toBe('PACK');
  expect(hash.digest('hex')).toBe(tail.toString('hex'));
  return { packBytes, objects: pack.readUInt32BE(8) };
}

test('a repository near the 2 GB push limit is pushed and fetched whole within the memory bound', async () => {
  const alice = await createUser(adminClient(server), 'alice');
  await alice.post('/repos', { name: 'large' });
  const { commit: sha, pack } = packOf(Array.from({ length: FILES }, () => new DistinctBlob(FILE_BYTES)));

  let started = performance.now();
  const pushed = await pushPack(`http://127.0.0.1:${server.port}/alice/large.git/git-receive-pack`, alice.token, sha, pack);
  const pushMs = performance.now() - started;
  expect(pushed.status).toBe(200);
  expect(pushed.report).toContain('unpack ok');
  expect(pushed.report).toContain('ok refs/heads/main');
  // git's own client sees the branch where the push put it.
  expect(await git.git(['ls-remote', remoteUrl(server, 'alice', 'large', alice.token), 'refs/heads/main'])).toBe(
    `${sha}\trefs/heads/main\n`,
  );

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
