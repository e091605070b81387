import { buildSchema, execute, parse, type ExecutionResult } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';

/**
 * graphql-jit is patched (patches/graphql-jit+*.patch) so that a leaf builds its error's
 * locations and path only when it fails. A failing leaf must still answer what graphql-js
 * answers: the same data, and each error with the same message, locations and path — at the top
 * level, inside a list, and inside a list in a list.
 */
const schema = buildSchema(`
  type Query { top: String!, maybe: Int, items: [Item] }
  type Item { name: String!, note: String, count: Int!, rows: [Row] }
  type Row { cell: String! }
`);

const rootValue = {
  top: null,
  maybe: new Error('no number'),
  items: [
    { name: 'a', note: 'fine', count: 1, rows: [{ cell: 'x' }] },
    { name: 'b', note: new Error('bad note'), count: 2, rows: [{ cell: 'y' }, { cell: null }] },
    { name: null, note: null, count: 3, rows: [] },
    { name: 'd', note: null, count: 'not a number', rows: [] },
  ],
};

const query = `
  query {
    maybe
    items { name note count rows { cell } }
  }
`;

function normalised(result: ExecutionResult) {
  return {
    data: result.data,
    errors: (result.errors ?? [])
      .map((error) => ({ message: error.message, locations: error.locations, path: error.path }))
      .sort((a, b) => JSON.stringify(a.path).localeCompare(JSON.stringify(b.path))),
  };
}

test('failing leaves answer as graphql-js answers', async () => {
  const document = parse(query);
  const compiled = compileQuery(schema, document);
  if (!isCompiledQuery(compiled)) throw new Error('did not compile');
  const jit = normalised(await compiled.query(rootValue, {}, {}));
  const reference = normalised(await execute({ schema, document, rootValue }));
  expect(jit).toEqual(reference);
  // The cases the comparison covers: a nullable leaf's error, a non-null leaf that is null (in a
  // list, and in a list in a list), a serialization that fails.
  expect(jit.errors.map((error) => error.path)).toEqual([
    ['items', 1, 'note'],
    ['items', 1, 'rows', 1, 'cell'],
    ['items', 2, 'name'],
    ['items', 3, 'count'],
    ['maybe'],
  ]);
  expect(jit.errors[0]!.locations).toEqual([{ line: 4, column: 18 }]);
});

test('a non-null top-level leaf that is null nulls the answer with its path', async () => {
  const document = parse('{ top }');
  const compiled = compileQuery(schema, document);
  if (!isCompiledQuery(compiled)) throw new Error('did not compile');
  const jit = normalised(await compiled.query(rootValue, {}, {}));
  expect(jit).toEqual(normalised(await execute({ schema, document, rootValue })));
  expect(jit.errors).toEqual([
    { message: 'Cannot return null for non-nullable field Query.top.', locations: [{ line: 1, column: 3 }], path: ['top'] },
  ]);
});
