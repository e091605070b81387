import fs from 'node:fs/promises';
import path from 'node:path';
import { remoteUrl } from './support/git.js';
import { alice, git, gitHost, server } from './support/git-host.js';

/**
 * The advertisement (`info/refs`) and a v2 `ls-refs` are answered whole from git run by the launcher
 * when they are small, and streamed when they are not (more than 1 MiB of refs): either way every
 * ref is listed, and a malformed request is still refused with 400.
 */
gitHost();

const pkt = (line: string) => (Buffer.byteLength(line) + 4).toString(16).padStart(4, '0') + line;
const TAGS = 25_000; // some 1.6 MB of advertisement

test('small and very large ref lists are listed in full, over protocol v0 and v2, and the repository clones', async () => {
  const { body } = await alice.post('/repos', { name: 'many-refs' });
  const repo = body as { id: string };
  const url = remoteUrl(server, 'alice', 'many-refs', alice.token);
  const work = await git.init('many-refs-src');
  const head = await git.commit(work, 'one', { 'a.txt': 'a\n' });
  await git.git(['push', '--quiet', url, 'main'], { cwd: work });

  const count = async (version: number) => {
    const listed = await git.git(['-c', `protocol.version=${version}`, 'ls-remote', url]);
    return listed.trim().split('\n').length;
  };
  expect(await count(0)).toBe(2); // HEAD and main
  expect(await count(2)).toBe(2);

  // Tags written straight into the repository on disk: pushing this many would take minutes.
  const refs = Array.from({ length: TAGS }, (_, i) => `${head} refs/tags/t-${String(i).padStart(6, '0')}\n`).join('');
  await fs.writeFile(path.join(server.dataDir, 'repositories', `${repo.id}.git`, 'packed-refs'), refs);
  expect(await count(0)).toBe(TAGS + 2);
  expect(await count(2)).toBe(TAGS + 2);
  await git.git(['clone', '--quiet', '--no-checkout', url, git.path('many-refs-clone')]);
  expect((await git.git(['tag', '--list'], { cwd: git.path('many-refs-clone') })).trim().split('\n')).toHaveLength(TAGS);

  expect(server.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
}, 120_000);

test('a malformed ls-refs request is refused with 400', async () => {
  expect((await alice.post('/repos', { name: 'listed' })).status).toBe(201);
  const res = await fetch(`${server.url}/alice/listed.git/git-upload-pack`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-git-upload-pack-request',
      'git-protocol': 'version=2',
      authorization: `Bearer ${alice.token}`,
    },
    body: `${pkt('command=ls-refs\n')}0001zzzz not a pkt-line`,
  });
  expect(res.status).toBe(400);
});
