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
  ['a wrong scalar inside the body', 'due_days', { ...good, input: { ...good.input, dueDays: 'soon' } }],
  ['an unknown enum value', 'state', { ...good, input: { ...good.input, state: 'MAYBE' } }],
  ['a missing required field', 'title', { ...good, input: { repositoryId: 'repo_1' } }],
  ['a missing field of a list item', 'labels.name', { ...good, input: { ...good.input, labels: [{ name: 'a' }, { colorHex: 'fff' }] } }],
  ['a wrong type in a list item', 'labels.name', { ...good, input: { ...good.input, labels: [{ name: 7 }] } }],
  ['the body not an object', 'input', { ...good, input: 'text' }],
  ['a wrong lone variable', 'number', { ...good, number: 'one' }],
  ['a missing required variable', 'number', { input: good.input }],
  ['null for a required variable', 'number', { ...good, number: null }],
])('%s is VALIDATION_FAILED naming %s', (_what, field, values) => {
  const error = judge(values);
  expect(error).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ field, code: 'invalid' }] });
  expect(error!.message).toMatch(/^Validation failed: /);
});
