import { adminClient, createUser, type Client } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer } from './support/server.js';
import { urqlClient } from './support/urql.js';
import { gql } from '@urql/core';

/**
 * /graphql runs a document by graphql-js the first time it comes and by its compiled form
 * (graphql-jit) from then on, and a query whose compiled form has run is answered from its text
 * without Apollo's pipeline (repeated-queries.ts) when it succeeds: all must answer alike, data
 * and errors, status and type included.
 */
let server: CairnServer;
let git: GitSandbox;
let owner: Client & { login: string };
let repo: PullRepo;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  git = await GitSandbox.create();
  const admin = adminClient(server);
  owner = await createUser(admin, 'jit-owner');
  const reviewer = await createUser(admin, 'jit-reviewer');
  repo = await PullRepo.create(server, git, owner, 'jit-repo');
  await owner.put(`/repos/${repo.id}/collaborators/${reviewer.login}`, { permission: 'write' });
  await owner.post(`/repos/${repo.id}/labels`, { name: 'bug', color: 'ff0000' });
  await repo.commit('topic', 'a change', { 'a.txt': 'a\n' });
  await repo.push(['topic']);
  const { number } = (await repo.open({ title: 'a change', head: 'topic' })).body;
  await owner.post(`/repos/${repo.id}/issues/${number}/labels`, { labels: ['bug'] });
  await owner.post(`/repos/${repo.id}/issues/${number}/assignees`, { assignees: [reviewer.login] });
  await owner.post(`/repos/${repo.id}/issues/${number}/comments`, { body: 'please look' });
  for (const body of ['first pass', 'second pass'])
    await reviewer.post(`/repos/${repo.id}/pulls/${number}/reviews`, {
      event: 'COMMENT',
      body,
      comments: [{ path: 'a.txt', line: 1, body: `on the line: ${body}` }],
    });
});
afterAll(async () => {
  await git.cleanup();
  await server.destroy();
});

/** Each document is new to the server (a comment names this file), so its first run is graphql-js's. */
const documents: Array<[name: string, query: string, variables: () => Record<string, unknown>]> = [
  [
    'a pull-request page: nested lists, batched loads, a timeline',
    `query PullPage($id: ID!) { repository(id: $id) { name pullRequests { totalCount hasMore nodes {
       number title state draft user { login } labels { name color } assignees { login }
       reviews { totalCount hasMore limit nodes { state body user { login } } }
       timeline { totalCount nodes { kind actor { login } label { name } comment { body } review { state body } } } } } } }`,
    () => ({ id: repo.id }),
  ],
  [
    'fragments, aliases, __typename and a directive on a variable',
    `query Named($id: ID!, $withIssues: Boolean!) { r: repository(id: $id) { __typename ...Names ... on Repository { private }
       issues @include(if: $withIssues) { totalCount } skipped: issues @skip(if: $withIssues) { totalCount } } }
     fragment Names on Repository { name fullName owner { login } }`,
    () => ({ id: repo.id, withIssues: true }),
  ],
  ['a document of two operations, one chosen', 'query A { viewer { login } } query B { viewer { id login } }', () => ({})],
  ['a repository that is not there: an error with its path', `{ repository(id: "repo_00000000000000000000000000") { name } }`, () => ({})],
  ['introspection', `{ __type(name: "PullRequest") { name kind fields { name type { kind name ofType { kind name } } } } }`, () => ({})],
  [
    'a mutation refused: the same invalid fields each time',
    'mutation($id: ID!) { createIssue(input: { repositoryId: $id, title: "  " }) { number } }',
    () => ({ id: repo.id }),
  ],
  [
    'a mutation: the same answer each time',
    'mutation($id: ID!) { updateRepository(id: $id, input: { description: "compiled" }) { name description } }',
    () => ({ id: repo.id }),
  ],
  ['an alias named __proto__', '{ __proto__: __typename viewer { __proto__: login } }', () => ({})],
  [
    'a query of 2,048 selections once its fragments are expanded',
    `{ ...F1 } ${Array.from({ length: 9 }, (_, i) => `fragment F${i + 1} on Query { ...F${i + 2} a${i}: __typename ...F${i + 2} }`).join(' ')}
     fragment F10 on Query { viewer { login } }`,
    () => ({}),
  ],
  [
    'a variable of the wrong type',
    'query($id: ID!, $limit: Int) { repository(id: $id) { issues(limit: $limit) { totalCount } } }',
    () => ({
      id: repo.id,
      limit: 'many',
    }),
  ],
];

async function post(query: string, variables: Record<string, unknown>, operationName?: string, accept = '*/*') {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', accept },
    body: JSON.stringify({ query, variables, operationName }),
  });
  const type = response.headers.get('content-type');
  return { status: response.status, type, body: (await response.json()) as any };
}

describe('compiled execution', () => {
  test.each(documents)('%s: answered alike on the first run and once compiled', async (name, query, variables) => {
    const document = `${query}\n# graphql-compiled.test: ${name}`;
    const operationName = name.startsWith('a document of two') ? 'B' : undefined;
    const first = await post(document, variables(), operationName);
    for (let run = 2; run <= 5; run++) expect(await post(document, variables(), operationName)).toEqual(first);
    expect(first.status).toBeLessThan(500);
    expect(first.body.errors?.[0]?.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');
  });

  test.each([
    ['application/graphql-response+json', 200, 'application/graphql-response+json; charset=utf-8'],
    ['application/json;q=0.5, application/graphql-response+json', 200, 'application/graphql-response+json; charset=utf-8'],
    ['application/json', 200, 'application/json; charset=utf-8'],
    ['text/plain', 406, 'application/json; charset=utf-8'],
  ])('Accept: %s is answered %d, %s, on every run', async (accept, status, type) => {
    const query = `query($id: ID!) { repository(id: $id) { name } } # graphql-compiled.test: accept ${accept}`;
    for (let run = 1; run <= 4; run++)
      expect({ run, ...(await post(query, { id: repo.id }, undefined, accept)) }).toMatchObject({ run, status, type });
  });

  test('a query that keeps failing runs once a request: after one failed quick run it goes to Apollo alone', async () => {
    const query = `query($id: ID!) { repository(id: $id) { name issues(limit: 5) { nodes { title } } } } # graphql-compiled.test: failing`;
    // What a request sends once in a while (the token verified again once its cache lapses, the
    // rate-limit window read once) is sent now, by another document: the runs below count only their own.
    await post('{ __typename } # graphql-compiled.test: warm-up', {});
    const statements: number[] = [];
    for (let run = 1; run <= 6; run++) {
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables: { id: 'repo_00000000000000000000000000' } }),
      });
      expect(((await response.json()) as any).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
      statements.push(Number(/sql;count=(\d+)/.exec(response.headers.get('server-timing') ?? '')?.[1]));
    }
    // Runs 1-2 by Apollo; run 3 quick, failed, then Apollo again; from then on Apollo alone, once.
    expect(statements[0]).toBeGreaterThan(0);
    expect(statements.slice(3)).toEqual([statements[0], statements[0], statements[0]]);
  });

  test('a mutation stops at its first failing field, however often it is sent', async () => {
    const mutation = `mutation($id: ID!) { a: createIssue(input: { repositoryId: $id, title: "  " }) { number }
      b: updateRepository(id: $id, input: { description: "after a failure" }) { description } }`;
    const answers = [];
    for (let run = 0; run < 3; run++) answers.push(await post(mutation, { id: repo.id }));
    expect(answers[0]!.body.data).toBeNull();
    expect(answers[0]!.body.errors).toHaveLength(1);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    const after = (await owner.get(`/repos/${repo.id}`)).body;
    expect(after.description).not.toBe('after a failure');
  });

  test('a connection asked only for its counts (no item is loaded) answers the counts of the full page', async () => {
    // Every batch-loaded connection of a listed pull request, asked for with its items and for its counts alone.
    const connections = ['reviews', 'timeline', 'reviewThreads', 'reviewComments'];
    const pages = (field: string) => `
      ${field}Full: ${field}(limit: 1) { totalCount hasMore limit offset nodes { id } }
      ${field}Counted: ${field}(limit: 1) { totalCount hasMore limit offset }
      ${field}Past: ${field}(limit: 1, offset: 50) { totalCount hasMore limit offset }`;
    const query = `query($id: ID!) { repository(id: $id) { pullRequests { nodes { ${connections.map(pages).join(' ')} } } } }`;
    const { body } = await post(query, { id: repo.id });
    const [pull] = body.data.repository.pullRequests.nodes;
    for (const field of connections) {
      const { nodes, ...counts } = pull[`${field}Full`];
      expect({ field, nodes: nodes.length, total: counts.totalCount > 1 }).toEqual({ field, nodes: 1, total: true });
      expect({ field, ...pull[`${field}Counted`] }).toEqual({ field, ...counts, hasMore: true });
      expect({ field, ...pull[`${field}Past`] }).toEqual({ field, totalCount: counts.totalCount, hasMore: false, limit: 1, offset: 50 });
    }
  });

  test('urql, a frontend client, gets the same answers from the first run and the compiled ones', async () => {
    const client = urqlClient(server, owner.token, { requestPolicy: 'network-only' });
    const page = gql`
      query UrqlPullPage($id: ID!) {
        repository(id: $id) {
          pullRequests(limit: 5) {
            nodes {
              number
              labels {
                name
              }
              reviews(limit: 5) {
                totalCount
                nodes {
                  body
                }
              }
              timeline(limit: 10) {
                nodes {
                  kind
                }
              }
            }
          }
        }
      }
    `;
    const answers = [];
    for (let run = 0; run < 4; run++) answers.push(await client.query(page, { id: repo.id }).toPromise());
    expect(answers[0]!.error).toBeUndefined();
    expect(answers[0]!.data.repository.pullRequests.nodes[0].reviews.totalCount).toBe(2);
    for (const answer of answers.slice(1)) expect(answer.data).toEqual(answers[0]!.data);
  });
});
