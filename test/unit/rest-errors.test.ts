import { buildSchema, getOperationAST, parse } from 'graphql';
import { judgeVariables } from '../../rest-facade/errors.js';

/**
 * The facade judges an operation's variables before running it (rest-facade/errors.ts): a wrong
 * value is 422 VALIDATION_FAILED naming its field, snake_case, from the path graphql-js reports.
 */
const schema = buildSchema(`
  enum State { OPEN CLOSED }
  input Label { name: String!, colorHex: String }
  input CreateInput { repositoryId: ID!, title: String!, state: State = OPEN, labels: [Label!], dueDays: Int }
  type Query { ok: Boolean }
  type Mutation { create(input: CreateInput!, number: Int!, note: String): Boolean }
`);
const definitions = getOperationAST(
  parse('mutation($input: CreateInput!, $number: Int!, $note: String) { create(input: $input, number: $number, note: $note) }'),
)!.variableDefinitions!;

const judge = (values: Record<string, unknown>) => judgeVariables(schema, definitions, values);
const good = { input: { repositoryId: 'repo_1', title: 't' }, number: 1 };

test('acceptable values: nothing to say', () => {
  expect(judge(good)).toBeNull();
  expect(judge({ ...good, note: null, input: { ...good.input, labels: [{ name: 'bug' }], dueDays: 3 } })).toBeNull();
});

test.each([
  ['a wrong scalar inside the body', 'due_days', 'invalid', { ...good, input: { ...good.input, dueDays: 'soon' } }],
  ['an unknown enum value', 'state', 'invalid', { ...good, input: { ...good.input, state: 'MAYBE' } }],
  ['a missing required field', 'title', 'missing', { ...good, input: { repositoryId: 'repo_1' } }],
  [
    'a missing field of a list item',
    'labels[1].name',
    'missing',
    { ...good, input: { ...good.input, labels: [{ name: 'a' }, { colorHex: 'fff' }] } },
  ],
  ['a wrong type in a list item', 'labels[0].name', 'invalid', { ...good, input: { ...good.input, labels: [{ name: 7 }] } }],
  ['the body not an object', 'input', 'invalid', { ...good, input: 'text' }],
  ['a wrong lone variable', 'number', 'invalid', { ...good, number: 'one' }],
  ['a missing required variable', 'number', 'missing', { input: good.input }],
  ['null for a required variable', 'number', 'invalid', { ...good, number: null }],
])('%s is VALIDATION_FAILED naming %s (%s)', (_what, field, code, values) => {
  const error = judge(values);
  expect(error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ field, code }] });
  expect(error!.message).toMatch(/^Validation failed: /);
  expect(error!.message).not.toMatch(/String!|Int!|Variable "|cannot represent|does not exist in/);
});

test('every wrong field has its own detail, in words a JSON client reads', () => {
  const error = judge({ number: 'one', input: { repositoryId: 'repo_1', state: 'MAYBE', labels: 'bug' } });
  expect(error!.details).toEqual([
    { field: 'title', code: 'missing', message: 'title is required' },
    { field: 'state', code: 'invalid', message: 'state must be one of: open, closed' },
    { field: 'labels', code: 'invalid', message: 'labels must be an array of objects' },
    { field: 'number', code: 'invalid', message: 'number must be an integer from -2147483648 to 2147483647' },
  ]);
});
