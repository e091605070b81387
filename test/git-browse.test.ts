import { adminClient, createUser } from './support/client.js';
import { GitSandbox, remoteUrl } from './support/git.js';
import { CairnServer } from './support/server.js';

let server: CairnServer;
let git: GitSandbox;
let alice: Awaited<ReturnType<typeof createUser>>;
let stranger: Awaited<ReturnType<typeof createUser>>;
let repoId: string;
const shas: Record<string, string> = {};

const BROWSE = `query($id: ID!, $ref: String, $path: String!, $limit: Int, $offset: Int) {
  repository(id: $id) {
    branches { totalCount nodes { name ref sha isDefault commit { sha messageHeadline } } }
    tags { totalCount nodes { name ref sha annotated message commit { sha } } }
    commits(ref: $ref, limit: $limit, offset: $offset) {
      totalCount limit offset hasMore
      nodes { sha message messageHeadline parents treeSha author { name email date } committer { name email date } }
    }
    tree(ref: $ref, path: $path) { totalCount truncated hasMore nodes { name path type mode sha size } }
  }
}`;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  git = await GitSandbox.create();
  const admin = adminClient(server);
  alice = await createUser(admin, 'git-browse-alice');
  stranger = await createUser(admin, 'git-browse-stranger');
  repoId = (await alice.post('/repos', { name: 'browse', private: true })).body.id;
  const work = await git.init('browse-work');
  shas.first = await git.commit(work, 'first\n\nbody text', { 'README.md': '# browse\n', 'src/a.ts': 'export const a = 1;\n' });
  shas.second = await git.commit(work, 'second', { 'src/b.ts': 'export const b = 2;\n', 'image.bin': Buffer.from([0x89, 0x50, 0, 1]) });
  await git.git(['tag', 'v1', shas.first], { cwd: work });
  await git.git(['tag', '-a', 'v2', '-m', 'version two'], { cwd: work });
  await git.git(['branch', 'dev', shas.first], { cwd: work });
  await git.git(['push', '--quiet', remoteUrl(server, 'git-browse-alice', 'browse', alice.token), 'main', 'dev', 'v1', 'v2'], {
    cwd: work,
  });
});
afterAll(async () => {
  await Promise.all([server.destroy(), git.cleanup()]);
});

test('branches, tags, history and the root tree', async () => {
  const { repository } = await alice.gql(BROWSE, { id: repoId, path: '' });
  expect(repository.branches).toEqual({
    totalCount: 2,
    nodes: [
      { name: 'dev', ref: 'refs/heads/dev', sha: shas.first, isDefault: false, commit: { sha: shas.first, messageHeadline: 'first' } },
      { name: 'main', ref: 'refs/heads/main', sha: shas.second, isDefault: true, commit: { sha: shas.second, messageHeadline: 'second' } },
    ],
  });
  expect(repository.tags.totalCount).toBe(2);
  const tags = Object.fromEntries(repository.tags.nodes.map((t: any) => [t.name, t]));
  expect(tags.v1).toEqual({
    name: 'v1',
    ref: 'refs/tags/v1',
    sha: shas.first,
    annotated: false,
    message: null,
    commit: { sha: shas.first },
  });
  expect(tags.v2).toMatchObject({ annotated: true, message: 'version two', commit: { sha: shas.second } });
  expect(tags.v2.sha).not.toBe(shas.second); // the tag object

  expect(repository.commits).toMatchObject({ totalCount: 2, limit: 30, offset: 0, hasMore: false });
  const [newest, oldest] = repository.commits.nodes;
  expect(newest).toMatchObject({ sha: shas.second, parents: [shas.first], author: { name: 'Test User', email: 'test@example.test' } });
  expect(oldest).toMatchObject({ sha: shas.first, message: 'first\n\nbody text', messageHeadline: 'first', parents: [] });

  expect(repository.tree).toMatchObject({ totalCount: 3, truncated: false, hasMore: false });
  expect(repository.tree.nodes.map((e: any) => [e.name, e.type, e.size])).toEqual([
    ['README.md', 'BLOB', 9],
    ['image.bin', 'BLOB', 4],
    ['src', 'TREE', null],
  ]);
});

test('history pages, at a ref; a subdirectory; files as text or binary', async () => {
  const { repository } = await alice.gql(BROWSE, { id: repoId, path: 'src/', ref: 'main', limit: 1, offset: 1 });
  expect(repository.commits).toMatchObject({ totalCount: 2, limit: 1, offset: 1, hasMore: false });
  expect(repository.commits.nodes.map((c: any) => c.sha)).toEqual([shas.first]);
  expect(repository.tree.nodes.map((e: any) => e.path)).toEqual(['src/a.ts', 'src/b.ts']);

  const atDev = await alice.gql(BROWSE, { id: repoId, path: 'src', ref: 'dev' });
  expect(atDev.repository.tree.nodes.map((e: any) => e.path)).toEqual(['src/a.ts']);

  const paged = await alice.gql(
    'query($id: ID!) { repository(id: $id) { tree(limit: 1, offset: 1) { totalCount hasMore nodes { name } } } }',
    {
      id: repoId,
    },
  );
  expect(paged.repository.tree).toEqual({ totalCount: 3, hasMore: true, nodes: [{ name: 'image.bin' }] });
  const atSha = await alice.gql(BROWSE, { id: repoId, path: '', ref: shas.first });
  expect(atSha.repository.commits.totalCount).toBe(1);

  const files = await alice.gql(
    `query($id: ID!) { repository(id: $id) {
      text: blob(path: "src/b.ts") { path sha size isBinary text }
      old: blob(path: "README.md", ref: "v1") { text }
      binary: blob(path: "image.bin") { size isBinary text } } }`,
    { id: repoId },
  );
  expect(files.repository.text).toMatchObject({ path: 'src/b.ts', size: 20, isBinary: false, text: 'export const b = 2;\n' });
  expect(files.repository.old.text).toBe('# browse\n');
  expect(files.repository.binary).toEqual({ size: 4, isBinary: true, text: null });
});

test('unknown refs and paths are NOT_FOUND; malformed ones are rejected before git sees them', async () => {
  const codeOf = async (field: string) => {
    const result = await alice.graphql(`query($id: ID!) { repository(id: $id) { ${field} } }`, { id: repoId });
    return result.errors?.[0]?.extensions?.code;
  };
  expect(await codeOf('tree(ref: "nope") { totalCount }')).toBe('NOT_FOUND');
  expect(await codeOf('tree(path: "missing") { totalCount }')).toBe('NOT_FOUND');
  expect(await codeOf('tree(path: "README.md") { totalCount }')).toBe('NOT_FOUND');
  expect(await codeOf('blob(path: "src") { size }')).toBe('NOT_FOUND');
  expect(await codeOf('blob(path: "nothing.txt") { size }')).toBe('NOT_FOUND');
  expect(await codeOf('commits(ref: "0000000000000000000000000000000000000000") { totalCount }')).toBe('NOT_FOUND');
  expect(await codeOf('commits(ref: "--output=/tmp/x") { totalCount }')).toBe('VALIDATION_FAILED');
  expect(await codeOf('commits(ref: "main~1") { totalCount }')).toBe('VALIDATION_FAILED');
  expect(await codeOf('tree(path: "../../etc") { totalCount }')).toBe('VALIDATION_FAILED');
  expect(await codeOf('blob(path: "src/./a.ts") { size }')).toBe('VALIDATION_FAILED');
});

test('an empty repository browses as empty; a private one is invisible to strangers', async () => {
  const empty = (await alice.post('/repos', { name: 'nothing-yet' })).body.id;
  const { repository } = await alice.gql(
    'query($id: ID!) { repository(id: $id) { branches { totalCount } tags { totalCount } commits { totalCount nodes { sha } } } }',
    { id: empty },
  );
  expect(repository).toEqual({ branches: { totalCount: 0 }, tags: { totalCount: 0 }, commits: { totalCount: 0, nodes: [] } });

  const hidden = await stranger.graphql('query($id: ID!) { repository(id: $id) { branches { totalCount } } }', { id: repoId });
  expect(hidden.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
});

test('git-backed fields count as what they can return in the cost limit: many are refused, a fair number are served', async () => {
  const aliases = (n: number) => Array.from({ length: n }, (_, i) => `b${i}: blob(path: "README.md") { text }`).join(' ');
  // Each blob may answer a MiB of text (cost 1,000): one on each of a page of 100 repositories is over the cost limit.
  const flood = await alice.graphql(`{ repositories(limit: 100) { nodes { ${aliases(1)} } } }`);
  expect(flood.status).toBe(400);
  expect(flood.errors![0].message).toMatch(/query cost \d+ exceeds the limit/);
  // 500 aliases do not get as far: the document is over the token limit.
  const aliased = await alice.graphql(`query($id: ID!) { repository(id: $id) { ${aliases(500)} } }`, { id: repoId });
  expect(aliased.status).toBe(400);
  // 30 blobs could answer 30 MiB: over the limit; 15 are served.
  expect((await alice.graphql(`query($id: ID!) { repository(id: $id) { ${aliases(30)} } }`, { id: repoId })).status).toBe(400);
  const fair = await alice.graphql(`query($id: ID!) { repository(id: $id) { ${aliases(15)} } }`, { id: repoId });
  expect(fair.errors).toBeUndefined();
  expect(Object.values(fair.data.repository)).toHaveLength(15);
  expect(Object.values(fair.data.repository).every((blob: any) => blob.text === '# browse\n')).toBe(true);
});

test('blob text is bounded as the JSON it is answered as: control characters count six bytes', async () => {
  const work = git.path('browse-work');
  await git.git(['checkout', '--quiet', '-b', 'large-text'], { cwd: work });
  await git.commit(work, 'large texts', { 'controls.txt': '\x01'.repeat(200_000), 'plain.txt': 'a'.repeat(1_000_000) });
  await git.git(['push', '--quiet', remoteUrl(server, 'git-browse-alice', 'browse', alice.token), 'large-text'], { cwd: work });
  const { repository } = await alice.gql(
    `query($id: ID!) { repository(id: $id) {
      controls: blob(ref: "large-text", path: "controls.txt") { size isBinary text }
      plain: blob(ref: "large-text", path: "plain.txt") { size isBinary text } } }`,
    { id: repoId },
  );
  // 200,000 bytes in git, 1.2 MB as JSON: described, without its text.
  expect(repository.controls).toEqual({ size: 200_000, isBinary: false, text: null });
  expect(repository.plain).toEqual({ size: 1_000_000, isBinary: false, text: 'a'.repeat(1_000_000) });
});
