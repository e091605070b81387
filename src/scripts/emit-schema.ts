/**
 * Writes the SDL to schema/schema.graphql, or with --check exits 1 when the
 * committed file is stale (the test suite runs the check).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { getSchema } from '../schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const file = path.join(root, 'schema', 'schema.graphql');
const header = '# Generated from the type-graphql resolvers by `npm run schema`. Do not edit.\n\n';
const sdl = header + printSchema(lexicographicSortSchema(await getSchema())) + '\n';

if (process.argv.includes('--check')) {
  const committed = await fs.readFile(file, 'utf8').catch(() => '');
  if (committed !== sdl) {
    console.error('schema/schema.graphql is stale: run `npm run schema` and commit it');
    process.exit(1);
  }
  console.log('schema/schema.graphql is up to date');
} else {
  await fs.writeFile(file, sdl);
  console.log(`wrote ${path.relative(root, file)}`);
}
