import { gql } from '@urql/core';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  buildClientSchema,
  getIntrospectionQuery,
  Kind,
  parse,
  type FieldNode,
  print,
  separateOperations,
  type IntrospectionQuery,
  type OperationDefinitionNode,
  type TypeNode,
} from 'graphql';
import { adminClient, createUser, type Client } from './support/client.js';
import { CairnServer, ROOT, sleep } from './support/server.js';
import { urqlClient } from './support/urql.js';

/**
 * What a GraphQL document may ask for: every hostile document is refused (400 BAD_REQUEST, a
 * message naming the limit) or answered about as soon as a trivial query, while the process keeps
 * answering /healthz; the standard introspection query passes; queries may come over GET.
 */
let server: CairnServer;
let user: Client & { login: string };

beforeAll(async () => {
  server = CairnServer.sharedServer();
  user = await createUser(adminClient(server), 'limits');
});
afterAll(() => server.destroy());

const repeat = (count: number, make: (i: number) => string) => Array.from({ length: count }, (_, i) => make(i)).join(' ');

/** 25 fragments, each spreading the next one twice: 1 KB, 2^24 selections once expanded. */
const fragmentBomb = `{ ...F1 } ${repeat(24, (i) => `fragment F${i + 1} on Query { ...F${i + 2} ...F${i + 2} }`)} fragment F25 on Query { viewer { login } }`;

/** Sends a document while asking /healthz: how long the document took, and /healthz beside it. */
async function sendTimed(query: string) {
  const started = Date.now();
  const [res, healthz] = await Promise.all([
    user.graphql(query),
    (async () => {
      await sleep(5);
      const asked = Date.now();
      const answer = await fetch(`${server.url}/healthz`);
      return { status: answer.status, ms: Date.now() - asked };
    })(),
  ]);
  return { res, ms: Date.now() - started, healthz };
}

/**
 * How much longer than a trivial query sent just before (`{ viewer { login } }`, with /healthz
 * beside it) a document and the /healthz beside it may take. The server is the run's shared one:
 * another file's push of 1,200 tags, its deliveries or its megabytes of commit messages can stall
 * any request for a second or more — a slowness that lasts slows the trivial query too, one that
 * starts in between is what the slack is for. What the bounds guard against costs far more: a
 * fragment bomb walked as expanded (2^24 selections: the cost estimate's walk would take ~40 s on
 * an idle core), a megabyte of one field compared pair by pair (95,000 of them: over a minute).
 */
const SLACK_MS = 4_000;

/** Sends `query` after the trivial query, and checks that it and /healthz beside it took at most SLACK_MS longer; its answer. */
async function sendPromptly(query: string) {
  const trivial = await sendTimed('{ viewer { login } }');
  expect(trivial.res.status).toBe(200);
  const sent = await sendTimed(query);
  expect(sent.healthz.status).toBe(200);
  expect(sent.ms).toBeLessThan(trivial.ms + SLACK_MS);
  expect(sent.healthz.ms).toBeLessThan(trivial.healthz.ms + SLACK_MS);
  return sent.res;
}

describe('documents that cost more than their size are refused at once', () => {
  test.each([
    ['a fragment bomb', fragmentBomb, /selects more than 5000 fields once its fragments are expanded/],
    ['2,000 aliases', `{ ${repeat(2000, (i) => `a${i}: viewer { login }`)} }`, /more than 1000 tokens/],
    ['31 aliases', `{ ${repeat(31, (i) => `a${i}: viewer { login }`)} }`, /31 aliases, more than the limit of 30/],
    ['100 KB of tokens', `{ ${'__typename '.repeat(9300)} }`, /more than 1000 tokens/],
    ['a 1 MB document of tokens', `{ ${'__typename '.repeat(95_000)} }`, /more than 1000 tokens/],
    [
      'deep nesting',
      `{ __type(name: "Repository") { fields { type { ${'ofType { '.repeat(300)}name${' }'.repeat(300)} } } } }`,
      /query depth \d+ exceeds the limit of 12/,
    ],
    ['51 directives', `{ ${repeat(51, () => 'viewer @skip(if: false) { login }')} }`, /51 directives, more than the limit of 50/],
    ['5,000 directives', `{ viewer ${'@include(if: true) '.repeat(5000)} { login } }`, /more than 1000 tokens/],
    [
      'one field 900 times',
      `{ viewer { ${'login '.repeat(900)}} }`,
      /more work to validate than GraphQL allows \(the limit of validation work/,
    ],
  ])('%s', async (_name, query, message) => {
    const res = await sendPromptly(query);
    expect(res.status).toBe(400);
    expect(res.errors).toEqual([{ message: expect.stringMatching(message), extensions: { code: 'BAD_REQUEST' } }]);
  });

  test('large documents within the limits are answered as quickly', async () => {
    const cases = [
      `{ viewer { login } } # ${'x'.repeat(100_000)}`, // 100 KB, few tokens
      `{ viewer { login } } # ${'x'.repeat(1_000_000)}`, // just under the 1 MiB body limit
      `{ ${repeat(30, (i) => `a${i}: viewer { login }`)} }`, // at the alias limit
      `{ ${'viewer { login } '.repeat(249)} }`, // 1,000 tokens, the same field 249 times (GraphQL compares every pair)
    ];
    for (const query of cases) {
      const res = await sendPromptly(query);
      expect(res.errors).toBeUndefined();
      expect(res.status).toBe(200);
    }
    const tooLarge = await user.graphql(`{ viewer { login } } # ${'x'.repeat(1_050_000)}`);
    expect(tooLarge.status).toBe(413);
  });

  test('a document over the token limit is refused each time it comes, and one within it answered each time', async () => {
    const within = `{ viewer { ${'login '.repeat(400)}} }`;
    const over = `{ viewer { ${'login '.repeat(1100)}} }`;
    for (let round = 0; round < 2; round++) {
      expect(await user.graphql(within)).toMatchObject({ status: 200, data: { viewer: { login: 'limits' } } });
      const refused = await user.graphql(over);
      expect(refused.status).toBe(400);
      expect(refused.errors).toEqual([
        { message: 'the document has more than 1000 tokens (the limit)', extensions: { code: 'BAD_REQUEST' } },
      ]);
    }
  });

  test('one document is costed again for each page size and @include its variables ask for, and each wrong variable is refused', async () => {
    // 100 repositories × 100 issues is over the cost limit; 10 × 10, or the issues skipped, is not.
    const query = `query($repositories: Int, $issues: Int, $deep: Boolean!) { repositories(limit: $repositories) {
      nodes { name issues(limit: $issues) @include(if: $deep) { nodes { title } } } } }`;
    const small = { repositories: 10, issues: 10, deep: true };
    const answered = async (variables: Record<string, unknown>) => {
      const res = await user.graphql(query, variables);
      expect(res).toMatchObject({ status: 200, data: { repositories: { nodes: expect.any(Array) } } });
      expect(res.errors).toBeUndefined();
    };
    const overCost = /^query cost \d+ exceeds the limit of 20000$/;
    for (let round = 0; round < 2; round++) {
      await answered(small);
      const large = await user.graphql(query, { repositories: 100, issues: 100, deep: true });
      expect(large.status).toBe(400);
      expect(large.errors![0]).toMatchObject({ message: expect.stringMatching(overCost), extensions: { code: 'BAD_REQUEST' } });
      await answered({ repositories: 100, issues: 100, deep: false });
      const wrong = await user.graphql(query, { ...small, issues: 'ten' });
      expect(wrong.status).toBe(400);
      expect(wrong.errors![0]).toMatchObject({ message: expect.stringContaining('$issues'), extensions: { code: 'BAD_USER_INPUT' } });
      const missing = await user.graphql(query, { repositories: 10 });
      expect(missing.status).toBe(400);
      expect(missing.errors![0]).toMatchObject({ message: expect.stringContaining('$deep'), extensions: { code: 'BAD_USER_INPUT' } });
    }
  });

  test('a mutation has at most 10 fields at its root, refused before any runs', async () => {
    const tokens = async () => (await user.gql('{ accessTokens { id } }')).accessTokens.length;
    const before = await tokens();
    const create = (alias: string) => `${alias}: createAccessToken(input: {name: "${alias}", scopes: ["repo"]}) { token }`;
    const eleven = await user.graphql(`mutation { ${repeat(11, (i) => create(`t${i}`))} }`);
    expect(eleven.status).toBe(400);
    expect(eleven.errors).toEqual([
      { message: 'the mutation has 11 fields at its root, more than the limit of 10', extensions: { code: 'BAD_REQUEST' } },
    ]);
    const throughFragments = await user.graphql(
      `mutation { ...A ... on Mutation { ...B } } fragment A on Mutation { ${repeat(6, (i) => create(`a${i}`))} } fragment B on Mutation { ${repeat(6, (i) => create(`b${i}`))} }`,
    );
    expect(throughFragments.errors![0].message).toMatch(/12 fields at its root, more than the limit of 10/);
    const fiveHundred = await user.graphql(`mutation { ${repeat(500, (i) => create(`t${i}`))} }`);
    expect(fiveHundred.status).toBe(400);
    expect(await tokens()).toBe(before);

    const two = await user.graphql(`mutation { ${create('first')} ${create('second')} }`);
    expect(two.errors).toBeUndefined();
    expect(await tokens()).toBe(before + 2);
  });

  test('every REST facade operation passes the limits', async () => {
    const dir = path.join(ROOT, 'rest-facade/operations');
    const all = parse(
      readdirSync(dir)
        .filter((file) => file.endsWith('.graphql'))
        .map((file) => readFileSync(path.join(dir, file), 'utf8'))
        .join('\n'),
    );
    const operations = Object.entries(separateOperations(all));
    expect(operations.length).toBeGreaterThan(30);
    const dummy = (type: TypeNode): unknown => {
      const named = type.kind === Kind.NON_NULL_TYPE ? type.type : type;
      if (named.kind !== Kind.NAMED_TYPE) return undefined;
      return { Int: 100, ID: '00000000-0000-0000-0000-000000000000', String: 'x' }[named.name.value];
    };
    for (const [name, document] of operations) {
      const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
      // Queries run with their largest pages (and so are costed); mutations without their variables, so nothing changes.
      const variables =
        operation.operation === 'query'
          ? Object.fromEntries((operation.variableDefinitions ?? []).map((v) => [v.variable.name.value, dummy(v.type)]))
          : {};
      const res = await user.request('POST', '/graphql', { body: { query: print(document), operationName: name, variables } });
      const codes = (res.body.errors ?? []).map((e: { extensions: { code: string } }) => e.extensions.code);
      expect({ name, codes: codes.filter((code: string) => code === 'BAD_REQUEST' || code.startsWith('GRAPHQL_')) }).toEqual({
        name,
        codes: [],
      });
      if (operation.operation === 'mutation') expect({ name, codes }).toEqual({ name, codes: ['BAD_USER_INPUT'] });
    }
  });
});

describe('introspection', () => {
  test.each([
    ['the default options', {}],
    [
      'every option',
      { descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true },
    ],
  ])('the standard introspection query passes with %s, and builds the schema', async (_name, options) => {
    const res = await user.graphql<IntrospectionQuery>(getIntrospectionQuery(options));
    expect(res.errors).toBeUndefined();
    const schema = buildClientSchema(res.data!);
    expect(schema.getQueryType()?.getFields().viewer).toBeDefined();
    expect(Object.keys(schema.getMutationType()!.getFields())).toContain('createAccessToken');
  });

  test('hostile introspection stays limited', async () => {
    const nested = `{ __schema { types { ${'ofType { '.repeat(30)}name${' }'.repeat(30)} } } }`;
    const deep = await user.graphql(nested);
    expect(deep.status).toBe(400);
    expect(deep.errors).toEqual([
      { message: expect.stringMatching(/^introspection depth \d+ exceeds the limit of 15$/), extensions: { code: 'BAD_REQUEST' } },
    ]);

    const aliased = await user.graphql(`{ ${repeat(50, (i) => `s${i}: __schema { types { name fields { name } } }`)} }`);
    expect(aliased.status).toBe(400);
    expect(aliased.errors![0]).toEqual({ message: expect.stringMatching(/50 aliases/), extensions: { code: 'BAD_REQUEST' } });

    // Two whole schemas in one operation: within the aliases, over the cost.
    const [operation, ...fragments] = parse(getIntrospectionQuery()).definitions;
    const schemaField = (operation as OperationDefinitionNode).selectionSet.selections[0] as FieldNode;
    const selections = print(schemaField.selectionSet!);
    const twice = await user.graphql(
      `{ first: __schema ${selections} second: __schema ${selections} } ${fragments.map((f) => print(f)).join(' ')}`,
    );
    expect(twice.status).toBe(400);
    expect(twice.errors![0].message).toMatch(/query cost \d+ exceeds the limit of 20000/);
  });
});

describe('GraphQL over GET', () => {
  test('urql sends queries over GET by default, behind the bearer token and the same limits', async () => {
    const methods: string[] = [];
    const urql = urqlClient(server, user.token, {
      fetch: (input, init) => {
        methods.push(init?.method ?? 'GET');
        return fetch(input, init);
      },
    });
    const created = await urql
      .mutation(
        gql`
          mutation ($name: String!) {
            createRepository(input: { name: $name }) {
              id
            }
          }
        `,
        { name: 'over-get' },
      )
      .toPromise();
    expect(created.error).toBeUndefined();
    const id = created.data.createRepository.id;
    const read = await urql
      .query(
        gql`
          query ($id: ID!) {
            repository(id: $id) {
              name
              owner {
                login
              }
            }
          }
        `,
        { id },
      )
      .toPromise();
    expect(read.error).toBeUndefined();
    expect(read.data.repository).toMatchObject({ name: 'over-get', owner: { login: 'limits' } });
    expect(methods).toEqual(['POST', 'GET']);

    const tooMany = await urql.query(gql`{ ${repeat(31, (i) => `a${i}: viewer { login }`)} }`, {}).toPromise();
    expect(methods[2]).toBe('GET');
    expect(tooMany.error?.graphQLErrors[0]).toMatchObject({
      message: expect.stringMatching(/31 aliases/),
      extensions: { code: 'BAD_REQUEST' },
    });

    const anonymous = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ viewer { login } }')}`);
    expect(anonymous.status).toBe(401);
  });

  test('a mutation over GET is 405 and runs nothing; a POST a browser may send cross-site runs nothing either', async () => {
    const tokens = async () => (await user.gql('{ accessTokens { id } }')).accessTokens.length;
    const before = await tokens();
    const mutation = 'mutation { createAccessToken(input: {name: "over-get", scopes: ["repo"]}) { token } }';
    const overGet = await fetch(`${server.url}/graphql?query=${encodeURIComponent(mutation)}`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(overGet.status).toBe(405);
    expect(overGet.headers.get('allow')).toBe('POST');
    const refusal = (await overGet.json()) as { errors: Array<{ extensions: { code: string } }> };
    expect(refusal.errors[0]!.extensions.code).toBe('BAD_REQUEST');
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
      const simple = await user.request('POST', '/graphql', {
        raw: JSON.stringify({ query: mutation }),
        headers: { 'content-type': contentType },
      });
      expect(simple.status).toBe(400);
    }
    expect(await tokens()).toBe(before);
  });
});
