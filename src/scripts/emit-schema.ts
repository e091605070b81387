/**
 * Writes the SDL to schema/schema.graphql, or with --check exits 1 when the
 * committed file is stale (the test suite runs the check).
 */
import { lexicographicSortSchema, printSchema } from 'graphql';
import { getSchema } from '../schema.js';
import { writeOrCheck } from './generated-file.js';

const header = '# Generated from the type-graphql resolvers by `npm run schema`. Do not edit.\n\n';
await writeOrCheck('schema/schema.graphql', header + printSchema(lexicographicSortSchema(await getSchema())) + '\n', 'npm run schema');
