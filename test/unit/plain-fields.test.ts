import { GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { getSchema } from '../../src/schema.js';

/**
 * Which fields of the real schema resolve by reading their property (no resolver of their own,
 * src/graphql/plain-fields.ts) and which keep a resolver: what graphql-jit then reads inline, and
 * what it calls.
 */
let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await getSchema();
});

const fieldOf = (type: string, field: string) => {
  const object = schema.getType(type);
  if (!(object instanceof GraphQLObjectType)) throw new Error(`${type} is not an object type`);
  return object.getFields()[field]!;
};

test('a plain property of an entity or a record has no resolver', () => {
  for (const [type, field] of [
    ['Issue', 'title'],
    ['Issue', 'number'],
    ['Repository', 'defaultBranch'],
    ['Actor', 'login'],
    ['IssueComment', 'body'],
    ['CommitStatus', 'state'],
    ['IssueConnection', 'nodes'],
    ['Issue', 'commentCount'], // a getter on the entity: reading the property runs it
    ['Issue', 'repositoryId'],
  ] as const) {
    expect([type, field, fieldOf(type, field).resolve]).toEqual([type, field, undefined]);
  }
});

test('a field computed by a field resolver keeps its resolver', () => {
  for (const [type, field] of [
    ['Repository', 'fullName'], // a @FieldResolver of its own capability
    ['Repository', 'openPullsCount'], // added to Repository from src/pulls
    ['Issue', 'labels'],
  ] as const) {
    expect([type, field, typeof fieldOf(type, field).resolve]).toEqual([type, field, 'function']);
  }
});
