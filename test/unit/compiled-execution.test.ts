import { GraphQLObjectType, GraphQLSchema, GraphQLString, getOperationAST, parse } from 'graphql';
import { pino } from 'pino';
import { compiledExecution } from '../../src/graphql/compiled-execution.js';

/**
 * Which queries /graphql keeps compiled, and which of them a repeated text finds without Apollo
 * (repeated-queries.ts): the executor is driven as Apollo drives it, with the document Apollo
 * parsed from the request's text.
 */
const field = {
  type: GraphQLString,
  args: { name: { type: GraphQLString } },
  resolve: (_: unknown, { name }: { name?: string }) => `hi ${name}`,
};
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { hello: field } }),
  mutation: new GraphQLObjectType({ name: 'Mutation', fields: { hello: field } }),
});

async function setUp() {
  const execution = compiledExecution<object>(schema, pino({ level: 'silent' }));
  const { executor } = await execution.gateway!.load({ apollo: {} as never });
  /** Runs a text once, as Apollo would: parsed (the same document for the same text only when `document` is given). */
  const run = async (text: string, operationName?: string, document = parse(text)) => {
    const operation = getOperationAST(document, operationName);
    const request = { query: text, operationName, variables: { name: 'you' } };
    const result = await executor!({ document, operation, request, context: {} } as never);
    return { document, result };
  };
  return { execution, run };
}

test('a query is found by its text once it has run compiled, and only under the operation name it was asked by', async () => {
  const { execution, run } = await setUp();
  const text = 'query Greet($name: String) { hello(name: $name) }';
  const { document } = await run(text);
  expect(execution.repeated(text, null)).toBeNull(); // its first run is graphql-js's
  const { result } = await run(text, undefined, document);
  expect(result).toEqual({ data: { hello: 'hi you' } });
  const found = execution.repeated(text, null)!;
  expect(found.operation.name?.value).toBe('Greet');
  expect(await found.query.query(undefined, {}, { name: 'again' })).toEqual({ data: { hello: 'hi again' } });
  expect(execution.repeated(text, 'Greet')).toBeNull();
  expect(execution.repeated(`${text} `, null)).toBeNull();
});

test('a mutation is never found: it always runs by graphql-js', async () => {
  const { execution, run } = await setUp();
  const text = 'mutation($name: String) { hello(name: $name) }';
  const { document } = await run(text);
  for (let i = 0; i < 3; i++) await run(text, undefined, document);
  expect(execution.repeated(text, null)).toBeNull();
});

test('kept queries are bounded by their text: a query in megabytes of comments pushes the least recently run out', async () => {
  const { execution, run } = await setUp();
  const padding = `# ${'x'.repeat(3 * 1024 * 1024)}\n`;
  const texts = ['a', 'b', 'c', 'd'].map((alias) => `${padding}{ ${alias}: hello }`);
  for (const text of texts) {
    const { document } = await run(text);
    await run(text, undefined, document);
  }
  // 8 Mi characters hold two of these 3 MiB documents: the two run last.
  expect(texts.map((text) => execution.repeated(text, null) !== null)).toEqual([false, false, true, true]);
});
