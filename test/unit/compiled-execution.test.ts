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

test('kept queries are bounded by their text: queries in long comments push the least recently run out', async () => {
  const { execution, run } = await setUp();
  // 600 texts of about 15,000 characters each: 8 Mi characters hold the 558 run last.
  const padding = `# ${'x'.repeat(15_000)}\n`;
  const texts = Array.from({ length: 600 }, (_, i) => `${padding}{ a${String(i).padStart(3, '0')}: hello }`);
  for (const text of texts) {
    const { document } = await run(text);
    await run(text, undefined, document);
  }
  const fits = Math.floor((8 * 1024 * 1024) / texts[0]!.length);
  const found = texts.map((text) => execution.repeated(text, null) !== null);
  expect(found).toEqual(texts.map((_, i) => i >= texts.length - fits));
});

test('a text longer than 16,383 characters is never found (V8 hashes such strings by their length alone)', async () => {
  const { execution, run } = await setUp();
  const text = `# ${'x'.repeat(16_384)}\n{ hello }`;
  const { document } = await run(text);
  expect((await run(text, undefined, document)).result).toEqual({ data: { hello: 'hi undefined' } });
  expect(execution.repeated(text, null)).toBeNull();
});

test("each operation of a document is found by its own name, a document's only operation by its name and by none", async () => {
  const { execution, run } = await setUp();
  const two = 'query A { a: hello } query B { b: hello }';
  const parsed = parse(two);
  for (const name of ['A', 'B', 'A', 'B']) await run(two, name, parsed);
  expect(execution.repeated(two, 'A')?.operation.name?.value).toBe('A');
  expect(execution.repeated(two, 'B')?.operation.name?.value).toBe('B');
  expect(execution.repeated(two, null)).toBeNull();

  const one = 'query Only { hello }';
  const document = parse(one);
  for (const name of ['Only', 'Only', undefined]) await run(one, name, document);
  expect(execution.repeated(one, 'Only')?.operation.name?.value).toBe('Only');
  expect(execution.repeated(one, null)?.operation.name?.value).toBe('Only');
});

test('a query whose run failed is not found until a run through the executor (Apollo) succeeds again', async () => {
  const { execution, run } = await setUp();
  const text = '{ hello }';
  const { document } = await run(text);
  await run(text, undefined, document);
  const found = execution.repeated(text, null)!;
  execution.failed(found.operation);
  expect(execution.repeated(text, null)).toBeNull();
  await run(text, undefined, document);
  expect(execution.repeated(text, null)?.operation).toBe(found.operation);
});
