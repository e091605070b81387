import { verify } from '@octokit/webhooks-methods';
import { gql } from '@urql/core';
import { adminClient, createUser, type Client } from './support/client.js';
import { settledDeliveries } from './support/deliveries.js';
import { Receiver } from './support/receiver.js';
import { CairnServer, query } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * Labels end to end: a repository's labels (REST and GraphQL), labels on issues, the list filters
 * and orders of issues, and the `label` and `issues` `labeled`/`unlabeled` webhooks delivered to a
 * loopback receiver.
 */

type User = Client & { login: string; userId: string };

let server: CairnServer;
let receiver: Receiver;
let owner: User;
let writer: User;
let reader: User;
let stranger: User;
let repoId: string;
let privateId: string;
let hookId: string;

const SECRET = 'labels-secret';

beforeAll(async () => {
  [server, receiver] = await Promise.all([CairnServer.sharedServer(), Receiver.start()]);
  const admin = adminClient(server);
  owner = await createUser(admin, 'labels-owner', ['repo', 'admin:repo_hook']);
  writer = await createUser(admin, 'labels-writer', ['repo']);
  reader = await createUser(admin, 'labels-reader', ['repo']);
  stranger = await createUser(admin, 'labels-stranger', ['repo']);
  repoId = (await owner.post('/repos', { name: 'labels-app' })).body.id;
  privateId = (await owner.post('/repos', { name: 'labels-private', private: true })).body.id;
  expect((await owner.put(`/repos/${repoId}/collaborators/labels-writer`, { permission: 'write' })).status).toBe(200);
  expect((await owner.put(`/repos/${repoId}/collaborators/labels-reader`, { permission: 'read' })).status).toBe(200);
  const hook = await owner.post(`/repos/${repoId}/webhooks`, { url: receiver.url('/labels'), events: ['label', 'issues'], secret: SECRET });
  expect(hook.status).toBe(201);
  hookId = hook.body.id;
});
afterAll(async () => {
  await Promise.all([receiver.close(), server.destroy()]);
});

const labels = (path = '') => `/repos/${repoId}/labels${path}`;
const issue = async (as: Client, title: string) => {
  const res = await as.post(`/repos/${repoId}/issues`, { title });
  expect(res.status).toBe(201);
  return res.body.number as number;
};

test('a repository label: created 201, listed by name, read, edited, deleted 204; writers only', async () => {
  const created = await writer.post(labels(), { name: 'Bug', color: '#D73A4A', description: 'Something is broken' });
  expect(created.status).toBe(201);
  expect(created.body).toEqual({ id: expect.stringMatching(/^lbl_/), name: 'Bug', color: 'd73a4a', description: 'Something is broken' });
  expect((await writer.post(labels(), { name: 'accessibility', color: '00ff00' })).status).toBe(201);

  const list = await reader.get(labels());
  expect(list.status).toBe(200);
  expect(list.body.map((l: { name: string }) => l.name)).toEqual(['accessibility', 'Bug']);
  expect((await reader.get(labels('/bug'))).body).toEqual(created.body); // any case

  const edited = await writer.patch(labels('/BUG'), { new_name: 'bug', color: 'ee0701' });
  expect(edited.status).toBe(200);
  expect(edited.body).toMatchObject({ id: created.body.id, name: 'bug', color: 'ee0701', description: 'Something is broken' });
  expect((await writer.patch(labels('/bug'), { name: 'defect' })).body.name).toBe('defect');

  expect((await reader.post(labels(), { name: 'nope', color: '000000' })).status).toBe(403);
  expect((await reader.patch(labels('/defect'), { color: '000000' })).status).toBe(403);
  expect((await reader.delete(labels('/defect'))).status).toBe(403);

  const deleted = await writer.delete(labels('/defect'));
  expect(deleted.status).toBe(204);
  expect((await reader.get(labels('/defect'))).status).toBe(404);
  expect((await writer.delete(labels('/defect'))).status).toBe(404);
});

test('label validation: a name clash without regard to case, a bad color, a missing name → 422', async () => {
  expect((await writer.post(labels(), { name: 'Docs', color: 'aaaaaa' })).status).toBe(201);
  const clash = await writer.post(labels(), { name: 'DOCS', color: 'bbbbbb' });
  expect(clash.status).toBe(422);
  expect(clash.body.error.code).toBe('validation_failed');
  expect(clash.body.error.details).toEqual([expect.objectContaining({ field: 'name', code: 'already_exists' })]);
  expect((await writer.post(labels(), { name: 'other', color: 'bbbbbb' })).status).toBe(201);
  expect((await writer.patch(labels('/other'), { name: 'docs' })).body.error.details[0].code).toBe('already_exists');

  for (const color of ['fff', 'gggggg', '1234567', '']) {
    const bad = await writer.post(labels(), { name: `c-${color}`, color });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'color', code: 'invalid' })]);
  }
  expect((await writer.patch(labels('/docs'), { color: 'red' })).status).toBe(422);
  expect((await writer.post(labels(), { name: ' ', color: '000000' })).status).toBe(422);
  expect((await writer.post(labels(), { name: 'a,b', color: '000000' })).status).toBe(422);
  expect((await writer.post(labels(), { color: '000000' })).status).toBe(422);
});

test('access: 401 without a token, 404 for an invisible repository, an unknown number or label', async () => {
  expect((await writer.get(labels(), { anonymous: true })).status).toBe(401);
  expect((await stranger.get(`/repos/${privateId}/labels`)).status).toBe(404);
  expect((await stranger.post(`/repos/${privateId}/labels`, { name: 'x', color: '000000' })).status).toBe(404);
  expect((await reader.get(`/repos/${repoId}/issues/99999/labels`)).status).toBe(404);
  expect((await writer.post(`/repos/${repoId}/issues/99999/labels`, { labels: [] })).status).toBe(404);
  expect((await reader.get(labels('/no-such-label'))).status).toBe(404);
});

test('labels of an issue: add 200 with its labels, replace, remove 204; an unknown label 422; a reader 403', async () => {
  for (const name of ['p1', 'p2', 'p3']) expect((await writer.post(labels(), { name, color: '123456' })).status).toBe(201);
  const number = await issue(reader, 'labelled');
  const path = `/repos/${repoId}/issues/${number}/labels`;

  const added = await writer.post(path, { labels: ['P1', 'p2'] });
  expect(added.status).toBe(200);
  expect(added.body.map((l: { name: string }) => l.name)).toEqual(['p1', 'p2']);
  expect((await writer.post(path, { labels: ['p1'] })).body).toHaveLength(2); // already there: nothing changes
  expect((await reader.get(path)).body.map((l: { name: string }) => l.name)).toEqual(['p1', 'p2']);

  const unknown = await writer.post(path, { labels: ['p1', 'nonexistent'] });
  expect(unknown.status).toBe(422);
  expect(unknown.body.error.details).toEqual([expect.objectContaining({ field: 'labels', code: 'invalid' })]);
  expect((await reader.post(path, { labels: ['p3'] })).status).toBe(403);
  expect((await reader.put(path, { labels: [] })).status).toBe(403);
  expect((await reader.delete(`${path}/p1`)).status).toBe(403);

  const replaced = await writer.put(path, { labels: ['p3', 'p2'] });
  expect(replaced.status).toBe(200);
  expect(replaced.body.map((l: { name: string }) => l.name)).toEqual(['p2', 'p3']);

  expect((await writer.delete(`${path}/P2`)).status).toBe(204);
  expect((await writer.delete(`${path}/p2`)).status).toBe(404); // not on it any more
  expect((await writer.delete(`${path}/never`)).status).toBe(404);

  const record = await reader.get(`/repos/${repoId}/issues/${number}`);
  expect(record.body.labels).toEqual([{ name: 'p3', color: '123456' }]);
  expect(record.body.assignees).toEqual([]);

  // Deleting a label takes it off its issues.
  expect((await writer.delete(labels('/p3'))).status).toBe(204);
  expect((await reader.get(path)).body).toEqual([]);
});

test('list filters and orders: labels (all of them), assignee, creator, sort, direction; bad values 422', async () => {
  for (const name of ['f-a', 'f-b']) expect((await writer.post(labels(), { name, color: 'abcdef' })).status).toBe(201);
  const one = await issue(writer, 'filter one');
  const two = await issue(reader, 'filter two');
  const three = await issue(writer, 'filter three');
  await writer.post(`/repos/${repoId}/issues/${one}/labels`, { labels: ['f-a', 'f-b'] });
  await writer.post(`/repos/${repoId}/issues/${two}/labels`, { labels: ['f-a'] });
  expect((await writer.post(`/repos/${repoId}/issues/${one}/assignees`, { assignees: ['labels-writer'] })).status).toBe(201);
  await writer.patch(`/repos/${repoId}/issues/${two}`, { title: 'filter two, edited' }); // the most recently updated

  const numbers = async (query: string) => {
    const res = await reader.get(`/repos/${repoId}/issues?${query}`);
    expect(res.status).toBe(200);
    return res.body.data.map((i: { number: number }) => i.number);
  };
  expect(await numbers('labels=f-a')).toEqual([two, one]);
  expect(await numbers('labels=F-A,f-b')).toEqual([one]);
  expect(await numbers('labels=f-a,unknown')).toEqual([]);
  expect(await numbers('assignee=labels-writer')).toEqual([one]);
  expect(await numbers('creator=labels-reader&labels=f-a')).toEqual([two]);
  expect((await numbers('assignee=none')).includes(one)).toBe(false);
  expect(await numbers('labels=f-a&assignee=none')).toEqual([two]);
  expect((await numbers('creator=labels-writer')).slice(0, 2)).toEqual([three, one]);
  expect((await numbers('creator=labels-writer&direction=asc')).slice(-2)).toEqual([one, three]);
  expect((await numbers('sort=updated'))[0]).toBe(two);
  expect(await numbers('labels=f-a&sort=created&direction=asc')).toEqual([one, two]);
  const total = await reader.get(`/repos/${repoId}/issues?labels=f-a&limit=1`);
  expect(total.body).toMatchObject({ total: 2, limit: 1, hasMore: true });

  for (const bad of ['sort=popularity', 'direction=up']) {
    const res = await reader.get(`/repos/${repoId}/issues?${bad}`);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('validation_failed');
  }
  expect((await reader.get(`/repos/${repoId}/issues?limit=x`)).status).toBe(400);
});

test('GraphQL through urql: labels of a repository and of each listed issue', async () => {
  const client = urqlClient(server, reader.token);
  const result = await client
    .query(
      gql`
        query ($id: ID!) {
          repository(id: $id) {
            labels {
              name
              color
            }
            issues(labels: ["f-a"], sort: CREATED, direction: ASC) {
              nodes {
                title
                labels {
                  name
                }
                assignees {
                  login
                }
              }
            }
          }
        }
      `,
      { id: repoId },
    )
    .toPromise();
  expect(result.error).toBeUndefined();
  expect(result.data.repository.labels.map((l: { name: string }) => l.name)).toEqual(expect.arrayContaining(['f-a', 'f-b']));
  expect(result.data.repository.issues.nodes).toEqual([
    { title: 'filter one', labels: [{ name: 'f-a' }, { name: 'f-b' }], assignees: [{ login: 'labels-writer' }] },
    { title: 'filter two, edited', labels: [{ name: 'f-a' }], assignees: [] },
  ]);
});

test('webhooks: label created, edited, deleted; issues labeled and unlabeled, one per label that came or went', async () => {
  const from = receiver.received.length;
  expect((await writer.post(labels(), { name: 'hooked', color: '111111' })).status).toBe(201);
  expect((await writer.post(labels(), { name: 'hooked-2', color: '222222' })).status).toBe(201);
  expect((await writer.patch(labels('/hooked'), { color: '333333' })).status).toBe(200);
  const number = await issue(writer, 'hooked issue');
  const path = `/repos/${repoId}/issues/${number}/labels`;
  await writer.post(path, { labels: ['hooked', 'hooked-2'] });
  await writer.post(path, { labels: ['hooked'] }); // nothing new: no event
  await writer.put(path, { labels: ['hooked'] }); // hooked-2 goes
  expect((await writer.delete(labels('/hooked-2'))).status).toBe(204);

  await settledDeliveries(server, [hookId]);
  const got = receiver.received.slice(from).filter((r) => r.path === '/labels');
  for (const r of got) expect(await verify(SECRET, r.raw.toString('utf8'), r.headers['x-cairn-signature-256'] as string)).toBe(true);
  const kinds = got.map((r) => `${r.body.event}.${r.body.action}:${r.body.label?.name ?? ''}`);
  // Deliveries of one webhook go in parallel: their order of arrival is not the order of the events.
  expect(kinds.sort()).toEqual(
    [
      'label.created:hooked',
      'label.created:hooked-2',
      'label.edited:hooked',
      'issues.opened:',
      'issues.labeled:hooked',
      'issues.labeled:hooked-2',
      'issues.unlabeled:hooked-2',
      'label.deleted:hooked-2',
    ].sort(),
  );
  const find = (action: string, label: string) => got.find((r) => r.body.action === action && r.body.label?.name === label)!.body;
  expect(find('edited', 'hooked').changes).toEqual({ color: { from: '111111' } });
  expect(find('edited', 'hooked').label).toMatchObject({ name: 'hooked', color: '333333' });
  expect(find('labeled', 'hooked-2').issue).toMatchObject({
    number,
    labels: [
      { name: 'hooked', color: '333333' },
      { name: 'hooked-2', color: '222222' },
    ],
    assignees: [],
  });
  expect(find('unlabeled', 'hooked-2').issue.labels).toEqual([{ name: 'hooked', color: '333333' }]);
  expect(find('unlabeled', 'hooked-2').sender).toEqual({ id: writer.userId, login: 'labels-writer' });
});

test('labels deleted while they are being added: each add answers 200 or 422, never 500, and keeps only labels that exist', async () => {
  const raceId = (await owner.post('/repos', { name: 'labels-race' })).body.id as string;
  const number = (await owner.post(`/repos/${raceId}/issues`, { title: 'race' })).body.number as number;
  for (let round = 0; round < 3; round++) {
    const names = Array.from({ length: 8 }, (_, i) => `race-${round}-${i}`);
    for (const name of names) expect((await owner.post(`/repos/${raceId}/labels`, { name, color: '00ff00' })).status).toBe(201);
    const answers = await Promise.all([
      ...names.flatMap((name) => [
        owner.post(`/repos/${raceId}/issues/${number}/labels`, { labels: [name] }),
        owner.put(`/repos/${raceId}/issues/${number}/labels`, { labels: names }),
      ]),
      ...names.map((name) => owner.delete(`/repos/${raceId}/labels/${name}`)),
    ]);
    for (const answer of answers) expect([200, 204, 422]).toContain(answer.status);
    const left = await owner.get(`/repos/${raceId}/issues/${number}/labels`);
    expect(left.status).toBe(200);
    expect(left.body).toEqual([]); // every label was deleted, and took itself off the issue
  }
}, 60_000);

test('a repository has at most 1000 labels, also when they are created at once', async () => {
  const capId = (await owner.post('/repos', { name: 'labels-cap' })).body.id as string;
  const statuses: number[] = [];
  // 900 first, then 150 at once: the last 100 places are raced for.
  for (let chunk = 0; chunk < 10; chunk++) {
    const answers = await Promise.all(
      Array.from({ length: chunk < 9 ? 100 : 150 }, (_, i) =>
        owner.post(`/repos/${capId}/labels`, { name: `cap-${chunk}-${i}`, color: '0000ff' }),
      ),
    );
    statuses.push(...answers.map((answer) => answer.status));
  }
  expect(statuses.filter((status) => status === 201)).toHaveLength(1000);
  expect(statuses.filter((status) => status !== 201).every((status) => status === 422)).toBe(true);
  expect((await owner.get(`/repos/${capId}/labels`)).body).toHaveLength(1000);
}, 120_000);

test('100 labels added at once to an issue with a 64 KiB body: 100 events and their timeline items, the service answering throughout', async () => {
  const repo = (await owner.post('/repos', { name: 'many-labels-long-body' })).body.id as string;
  const names = Array.from({ length: 100 }, (_, i) => `tag-${i}`);
  for (let i = 0; i < names.length; i += 20) {
    const made = await Promise.all(names.slice(i, i + 20).map((name) => owner.post(`/repos/${repo}/labels`, { name, color: '00ff00' })));
    expect(made.map((res) => res.status)).toEqual(Array(made.length).fill(201));
  }
  const opened = await owner.post(`/repos/${repo}/issues`, { title: 'long', body: 'B'.repeat(65_536) });
  const added = await owner.post(`/repos/${repo}/issues/${opened.body.number}/labels`, { labels: names });
  expect(added.status).toBe(200);
  expect(added.body).toHaveLength(100);
  const [counted] = await query<{ events: number; items: number }>(
    server,
    `select (select count(*)::int from domain_events where repository_id = $1 and type = 'issues' and action = 'labeled') as events,
            (select count(*)::int from timeline_items where repository_id = $1 and kind = 'labeled') as items`,
    [repo],
  );
  expect(counted).toEqual({ events: 100, items: 100 });
  expect((await owner.get(`/repos/${repo}`)).status).toBe(200);
});
