import { adminClient, createUser, type ApiResponse } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { Receiver } from './support/receiver.js';
import { CairnServer } from './support/server.js';

/**
 * Issues and pull requests of a repository share one number sequence: whatever mix of them is
 * created at once, through REST or GraphQL, by the owner or another user, the numbers handed out
 * are exactly 1..N — no gap for a creation that was refused, no duplicate — and each creation
 * recorded exactly one event, delivered exactly once, carrying the number its creator was given.
 */

let server: CairnServer;
let git: GitSandbox;
let receiver: Receiver;
let owner: Awaited<ReturnType<typeof createUser>>;
let reporter: Awaited<ReturnType<typeof createUser>>;

beforeAll(async () => {
  [server, git, receiver] = await Promise.all([CairnServer.sharedServer(), GitSandbox.create(), Receiver.start()]);
  const admin = adminClient(server);
  owner = await createUser(admin, 'numberer', ['repo', 'admin:repo_hook']);
  reporter = await createUser(admin, 'reporter');
});
afterAll(async () => {
  await Promise.all([server?.destroy(), git?.cleanup(), receiver?.close()]);
});

const CREATE_ISSUE = 'mutation($input: CreateIssueInput!) { createIssue(input: $input) { number title } }';
/** Numbers and quotes a stand-in for the number could be confused with: they must come back as written. */
const TRICKY_TITLE = '"number":-1 and 123 "number":0';

type Outcome = { kind: 'issue' | 'pull' | 'refused'; number?: number; title?: string; problem?: string };

test('64 concurrent creations (REST and GraphQL issues, pull requests, refused ones) take exactly 1..N, one delivered event each', async () => {
  const repo = await PullRepo.create(server, git, owner, 'numbers');
  const heads = Array.from({ length: 8 }, (_, i) => `feature-${i}`);
  for (const head of heads) await repo.commit(head, head, { [`${head}.txt`]: `${head}\n` });
  await repo.push(heads);
  const hook = await owner.post(`/repos/${repo.id}/webhooks`, { url: receiver.url('/numbers'), events: ['issues', 'pull_request'] });
  expect(hook.status).toBe(201);

  const restIssue = async (title: string, as = owner): Promise<Outcome> => {
    const res = await as.post(`/repos/${repo.id}/issues`, { title, body: `body of ${title}` });
    return res.status === 201 ? { kind: 'issue', number: res.body.number, title: res.body.title } : refused(res);
  };
  const graphqlIssue = async (title: string, as = owner): Promise<Outcome> => {
    const result = await as.graphql(CREATE_ISSUE, { input: { repositoryId: repo.id, title } });
    if (result.data?.createIssue) return { kind: 'issue', ...result.data.createIssue };
    return { kind: 'refused', problem: `graphql ${result.errors?.[0]?.extensions?.code}` };
  };
  const pull = async (head: string): Promise<Outcome> => {
    const res = await repo.open({ title: `pull ${head}`, head, base: 'main' });
    return res.status === 201 ? { kind: 'pull', number: res.body.number, title: res.body.title } : refused(res);
  };
  const refused = (res: ApiResponse): Outcome => ({ kind: 'refused', problem: `${res.status} ${res.body?.error?.code}` });

  // 46 issues, 8 pull requests and 12 refusals, interleaved so every kind runs beside every other.
  const work: Array<() => Promise<Outcome | Outcome[]>> = [];
  for (let i = 0; i < 8; i++) {
    work.push(
      () => restIssue(`rest ${i}`),
      () => graphqlIssue(`graphql ${i}`),
      () => pull(heads[i]!),
      () => restIssue(`reporter rest ${i}`, reporter),
      () => graphqlIssue(`reporter graphql ${i}`, reporter),
      () => restIssue(i === 0 ? TRICKY_TITLE : `rest bis ${i}`),
    );
  }
  for (let i = 0; i < 4; i++) work.push(() => graphqlIssue(`graphql bis ${i}`));
  for (let i = 0; i < 4; i++) work.push(() => restIssue('   ')); // empty once trimmed: 422
  for (let i = 0; i < 4; i++) work.push(() => graphqlIssue('x'.repeat(257))); // too long: VALIDATION_FAILED
  for (let i = 0; i < 2; i++) work.push(() => pull('no-such-branch')); // 422 unknown_branch
  // An issue, then a second pull request for a pair already open (422): one number used, one given back.
  for (let i = 0; i < 2; i++) work.push(async () => [await restIssue(`reporter then ${i}`, reporter), await pull(heads[i]!)]);
  expect(work).toHaveLength(64);
  const outcomes = (await Promise.all(work.map((start) => start()))).flat();

  const made = outcomes.filter((o) => o.kind !== 'refused');
  const issues = made.filter((o) => o.kind === 'issue');
  expect(issues).toHaveLength(46);
  expect(made.filter((o) => o.kind === 'pull')).toHaveLength(8);
  expect(
    outcomes
      .filter((o) => o.kind === 'refused')
      .map((o) => o.problem)
      .sort(),
  ).toEqual([...Array(8).fill('422 validation_failed'), ...Array(4).fill('graphql VALIDATION_FAILED')]);
  const numbers = made.map((o) => o.number!).sort((a, b) => a - b);
  expect(numbers).toEqual(Array.from({ length: made.length }, (_, i) => i + 1));
  expect(issues.find((o) => o.title === TRICKY_TITLE)).toBeDefined();

  // What the API lists agrees with what the creators were told.
  const listed = [
    ...(await owner.get(`/repos/${repo.id}/issues?state=all&limit=100`)).body.data,
    ...(await owner.get(`/repos/${repo.id}/pulls?state=all&limit=100`)).body.data,
  ] as Array<{ number: number; title: string }>;
  expect(new Map(listed.map((item) => [item.number, item.title]))).toEqual(new Map(made.map((o) => [o.number!, o.title!])));
  expect((await owner.get(`/repos/${repo.id}`)).body.open_issues_count).toBe(issues.length);

  // One event per creation, delivered once, with the number and title its creator got back.
  const delivered = await receiver.waitFor('/numbers', made.length, 30_000);
  const items = delivered.map((r) =>
    r.body.issue ? { kind: 'issue', number: r.body.issue.number, title: r.body.issue.title } : { kind: 'pull', ...r.body.pull_request },
  );
  expect(delivered.every((r) => r.body.action === 'opened')).toBe(true);
  expect(items.map((item) => `${item.kind} ${item.number} ${item.title}`).sort()).toEqual(
    made.map((o) => `${o.kind} ${o.number} ${o.title}`).sort(),
  );
  const deliveries = await owner.get(`/repos/${repo.id}/webhooks/${hook.body.id}/deliveries?limit=100`);
  expect(deliveries.body.total).toBe(made.length);

  // The sequence goes on from there.
  expect((await restIssue('after the race')).number).toBe(made.length + 1);
});

test('a refused or failed creation leaves no trace: no number, no event, no delivery', async () => {
  const repo = (await owner.post('/repos', { name: 'refusals' })).body.id as string;
  const hook = await owner.post(`/repos/${repo}/webhooks`, { url: receiver.url('/refusals'), events: ['*'] });
  expect(hook.status).toBe(201);
  const refusals = await Promise.all([
    owner.post(`/repos/${repo}/issues`, { title: '' }),
    owner.post(`/repos/${repo}/issues`, { title: 'x'.repeat(257) }),
    owner.post(`/repos/${repo}/issues`, { title: 42 }),
    owner.post(`/repos/${repo}/issues`, {}),
    owner.post(`/repos/repo_00000000000000000000000000/issues`, { title: 'nowhere' }),
  ]);
  expect(refusals.map((res) => res.status)).toEqual([422, 422, 422, 422, 404]);
  const first = await owner.post(`/repos/${repo}/issues`, { title: 'first' });
  expect(first.body.number).toBe(1);
  await receiver.waitFor('/refusals', 1);
  expect(receiver.at('/refusals').map((r) => r.body.issue.title)).toEqual(['first']);
  const deliveries = await owner.get(`/repos/${repo}/webhooks/${hook.body.id}/deliveries`);
  expect(deliveries.body.total).toBe(1);
});

test('open_issues_count follows concurrent openings, closes and reopens', async () => {
  const repo = (await owner.post('/repos', { name: 'counted' })).body.id as string;
  const opened = await Promise.all(Array.from({ length: 20 }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `counted ${i}` })));
  expect(opened.every((res) => res.status === 201)).toBe(true);
  // Each issue closed twice at once (one transition), odd ones reopened, and more opened meanwhile.
  const changes = await Promise.all([
    ...opened.flatMap((res) => [1, 2].map(() => owner.patch(`/repos/${repo}/issues/${res.body.number}`, { state: 'closed' }))),
    ...Array.from({ length: 10 }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `more ${i}` })),
  ]);
  expect(changes.every((res) => res.status === 200 || res.status === 201)).toBe(true);
  await Promise.all(
    opened.filter((_, i) => i % 2 === 1).map((res) => owner.patch(`/repos/${repo}/issues/${res.body.number}`, { state: 'open' })),
  );
  const listed = (await owner.get(`/repos/${repo}/issues?state=open&limit=100`)).body.total;
  expect(listed).toBe(10 + 10);
  expect((await owner.get(`/repos/${repo}`)).body.open_issues_count).toBe(listed);
  const { repository } = await owner.gql('query($id: ID!) { repository(id: $id) { openIssuesCount } }', { id: repo });
  expect(repository.openIssuesCount).toBe(listed);
  const mine = (await owner.get('/repos?owner=numberer&limit=100')).body.data.find((r: { id: string }) => r.id === repo);
  expect(mine.open_issues_count).toBe(listed);
});

test('deleting a repository while issues are opened and closed in it: no 5xx, and nothing is left', async () => {
  const repo = (await owner.post('/repos', { name: 'doomed' })).body.id as string;
  for (let i = 0; i < 5; i++) await owner.post(`/repos/${repo}/issues`, { title: `doomed ${i}` });
  const answers = await Promise.all([
    ...Array.from({ length: 20 }, (_, i) => owner.post(`/repos/${repo}/issues`, { title: `racing ${i}` })),
    ...Array.from({ length: 5 }, (_, i) => owner.patch(`/repos/${repo}/issues/${i + 1}`, { state: 'closed' })),
    owner.delete(`/repos/${repo}`),
  ]);
  expect(answers.map((res) => res.status).filter((status) => ![200, 201, 204, 404].includes(status))).toEqual([]);
  expect((await owner.get(`/repos/${repo}`)).status).toBe(404);
  expect((await owner.post(`/repos/${repo}/issues`, { title: 'too late' })).status).toBe(404);
});
