import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema, isInputObjectType, parse, type GraphQLInputObjectType, type GraphQLInputType } from 'graphql';
import { NotAList, resultShape, toGraphQLValue, toRest, variableTypes } from '../../rest-facade/convert.js';
import { snakeCase } from '../../src/http/error-answers.js';

/**
 * The REST dialect of a GraphQL value (rest-facade/convert.ts, README "REST"): snake_case keys and
 * lowercase enum values where GraphQL says camelCase and UPPER; unknown fields are ignored; wrong
 * types are left for GraphQL to reject (422); a lone value where a list belongs is NotAList.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const schema = buildSchema(`
  enum State { OPEN CLOSED NOT_PLANNED }
  input Inner { headRef: String, mergeMethod: State }
  input Filter { state: State, states: [State!], labelNames: [String!], sinceDate: String, inner: Inner, inners: [Inner!] }
  type User { login: String!, avatarUrl: String }
  type Issue { number: Int!, state: State!, createdAt: String!, author: User }
  type Repo {
    id: ID!
    defaultBranch: String
    state: State
    states: [State!]
    owner: User
    issues(filter: Filter): [Issue!]!
  }
  type Query { repo(id: ID!, filter: Filter): Repo }
`);
const Filter = schema.getType('Filter') as GraphQLInputObjectType;

describe('toGraphQLValue: REST JSON to a GraphQL variable', () => {
  test('snake_case keys become camelCase, enum strings upper case, at every depth', () => {
    expect(
      toGraphQLValue(
        {
          state: 'open',
          states: ['closed', 'not_planned'],
          label_names: ['bug'],
          since_date: '2024-01-01',
          inner: { head_ref: 'main', merge_method: 'open' },
        },
        Filter,
      ),
    ).toEqual({
      state: 'OPEN',
      states: ['CLOSED', 'NOT_PLANNED'],
      labelNames: ['bug'],
      sinceDate: '2024-01-01',
      inner: { headRef: 'main', mergeMethod: 'OPEN' },
    });
  });

  test('lists of input objects are converted item by item', () => {
    expect(toGraphQLValue({ inners: [{ head_ref: 'a' }, { head_ref: 'b', extra: 1 }] }, Filter)).toEqual({
      inners: [{ headRef: 'a' }, { headRef: 'b' }],
    });
  });

  test('unknown fields are dropped, not passed on', () => {
    expect(toGraphQLValue({ state: 'open', colour: 'red', __proto__x: 1, inner: { nope: true } }, Filter)).toEqual({
      state: 'OPEN',
      inner: {},
    });
  });

  test('null and absent values stay as they are (null clears a field, absent leaves it)', () => {
    expect(toGraphQLValue({ state: null, inner: null }, Filter)).toEqual({ state: null, inner: null });
    expect(toGraphQLValue(null, Filter)).toBeNull();
    expect(toGraphQLValue(undefined, Filter)).toBeUndefined();
  });

  test('wrong types are left for GraphQL coercion to reject', () => {
    expect(toGraphQLValue({ state: 5, since_date: 7 }, Filter)).toEqual({ state: 5, sinceDate: 7 });
    expect(toGraphQLValue('not an object', Filter)).toBe('not an object');
    expect(toGraphQLValue(['an', 'array'], Filter)).toEqual(['an', 'array']);
    expect(toGraphQLValue({ states: [1, 'open'] }, Filter)).toEqual({ states: [1, 'OPEN'] });
  });

  test('a lone value where a list belongs is NotAList, naming the REST field path', () => {
    expect(() => toGraphQLValue({ label_names: 'bug' }, Filter)).toThrow(NotAList);
    expect(() => toGraphQLValue({ label_names: 'bug' }, Filter)).toThrow('label_names must be an array');
    expect(() => toGraphQLValue({ inner: { x: 1 }, inners: { head_ref: 'a' } }, Filter, 'filter')).toThrow(
      'filter.inners must be an array',
    );
    let thrown: unknown;
    try {
      toGraphQLValue({ states: 'open' }, Filter, 'body');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ field: 'body.states', message: 'body.states must be an array' });
  });
});

describe('resultShape and toRest: a GraphQL result in REST', () => {
  const document = parse(`
    query($id: ID!, $filter: Filter) {
      repo(id: $id) {
        id
        defaultBranch
        state
        states
        theOwner: owner { ...UserParts }
        issues(filter: $filter) { number state createdAt author { login } }
      }
    }
    fragment UserParts on User { login avatarUrl }
  `);
  const shape = resultShape(schema, document);

  test('keys become snake_case (aliases too), enum values lower case, lists and fragments included', () => {
    const data = {
      repo: {
        id: 'r1',
        defaultBranch: 'main',
        state: 'NOT_PLANNED',
        states: ['OPEN', 'CLOSED'],
        theOwner: { login: 'ann', avatarUrl: 'https://a/x.png' },
        issues: [
          { number: 1, state: 'OPEN', createdAt: '2024-01-01T00:00:00Z', author: { login: 'bob' } },
          { number: 2, state: 'CLOSED', createdAt: '2024-01-02T00:00:00Z', author: null },
        ],
      },
    };
    expect(toRest(data, shape)).toEqual({
      repo: {
        id: 'r1',
        default_branch: 'main',
        state: 'not_planned',
        states: ['open', 'closed'],
        the_owner: { login: 'ann', avatar_url: 'https://a/x.png' },
        issues: [
          { number: 1, state: 'open', created_at: '2024-01-01T00:00:00Z', author: { login: 'bob' } },
          { number: 2, state: 'closed', created_at: '2024-01-02T00:00:00Z', author: null },
        ],
      },
    });
  });

  test('null objects and enums stay null; fields absent from the result stay absent', () => {
    expect(toRest({ repo: null }, shape)).toEqual({ repo: null });
    expect(toRest({ repo: { id: 'r', state: null, theOwner: null } }, shape)).toEqual({ repo: { id: 'r', state: null, the_owner: null } });
    // Absent, not present as undefined: a route's own code may look at the keys.
    expect(Object.keys((toRest({ repo: { id: 'r', state: null } }, shape) as { repo: object }).repo)).toEqual(['id', 'state']);
  });

  test('a Date leaf becomes the text JSON.stringify would write', () => {
    const at = new Date('2024-01-02T03:04:05.678Z');
    const data = { repo: { id: 'r', issues: [{ number: 1, state: 'OPEN', createdAt: at, author: null }] } };
    expect(toRest(data, shape)).toEqual({
      repo: { id: 'r', issues: [{ number: 1, state: 'open', created_at: '2024-01-02T03:04:05.678Z', author: null }] },
    });
  });

  test('keys the operation did not select are not passed through', () => {
    expect(toRest({ repo: { id: 'r', secret: 'x' }, other: 1 }, shape)).toEqual({ repo: { id: 'r' } });
  });

  test('each shape knows its GraphQL type and whether it is an enum', () => {
    const repo = shape[0]!;
    expect(repo).toMatchObject({ key: 'repo', restKey: 'repo', isEnum: false });
    const byKey = new Map(repo.children!.map((field) => [field.key, field]));
    expect(byKey.get('state')).toMatchObject({ restKey: 'state', isEnum: true });
    expect(byKey.get('states')).toMatchObject({ isEnum: true });
    expect(byKey.get('theOwner')).toMatchObject({ restKey: 'the_owner', isEnum: false });
    expect(String(byKey.get('issues')!.type)).toBe('[Issue!]!');
  });

  test('a document without an operation, or with an unknown fragment, is refused', () => {
    expect(() => resultShape(schema, parse('fragment F on User { login }'))).toThrow('document has no operation');
    expect(() => resultShape(schema, parse('{ repo(id: "x") { owner { ...Missing } } }'))).toThrow('unknown fragment Missing');
  });

  test('variableTypes reads each declared variable type', () => {
    const types = variableTypes(schema, document);
    expect([...types.keys()]).toEqual(['id', 'filter']);
    expect(String(types.get('id'))).toBe('ID!');
    expect(types.get('filter')).toBe(Filter);
    expect(() => variableTypes(schema, parse('query($x: Nope) { repo(id: "1") { id } }'))).toThrow('unknown type of variable $x');
  });
});

describe('snake_case and camelCase against the real schema', () => {
  const real = buildSchema(fs.readFileSync(path.join(ROOT, 'schema/schema.graphql'), 'utf8'));

  test('snakeCase spells GraphQL names the REST way', () => {
    expect(snakeCase('defaultBranch')).toBe('default_branch');
    expect(snakeCase('id')).toBe('id');
    expect(snakeCase('htmlUrl')).toBe('html_url');
  });

  test('every input field of the schema is reachable under its snake_case name', () => {
    const inputs = Object.values(real.getTypeMap()).filter(
      (type): type is GraphQLInputObjectType => isInputObjectType(type) && !type.name.startsWith('__'),
    );
    expect(inputs.length).toBeGreaterThan(0);
    for (const type of inputs) {
      for (const field of Object.values(type.getFields())) {
        const converted = toGraphQLValue({ [snakeCase(field.name)]: null }, type as GraphQLInputType) as Record<string, unknown>;
        expect({ type: type.name, keys: Object.keys(converted) }).toEqual({ type: type.name, keys: [field.name] });
      }
    }
  });

  test('every facade operation has a REST shape whose keys are distinct at each level', () => {
    const dir = path.join(ROOT, 'rest-facade/operations');
    const files = fs.readdirSync(dir).filter((name) => name.endsWith('.graphql'));
    expect(files.length).toBeGreaterThan(0);
    // The documents are one set, as codegen reads them: an operation may use a fragment of any file.
    const documents = files.map((file) => ({ file, document: parse(fs.readFileSync(path.join(dir, file), 'utf8')) }));
    const fragments = documents.flatMap(({ document }) => document.definitions.filter((d) => d.kind === 'FragmentDefinition'));
    for (const { file, document: whole } of documents) {
      for (const definition of whole.definitions) {
        if (definition.kind !== 'OperationDefinition') continue;
        const single = { ...whole, definitions: [definition, ...fragments] };
        const check = (fields: ReturnType<typeof resultShape>, where: string) => {
          const keys = fields.map((field) => field.restKey);
          expect({ where, duplicates: keys.filter((key, i) => keys.indexOf(key) !== i) }).toEqual({ where, duplicates: [] });
          for (const field of fields) if (field.children) check(field.children, `${where}.${field.restKey}`);
        };
        check(resultShape(real, single), `${file}:${definition.name?.value ?? '(anonymous)'}`);
      }
    }
  });
});
