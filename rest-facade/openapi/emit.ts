/**
 * Writes the REST facade's OpenAPI document to schema/openapi.json, or with --check exits 1 when
 * the committed file is stale (test/openapi.test.ts runs the check).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { getSchema } from '../../src/schema.js';
import { ALL_ROUTES } from '../index.js';
import { openApiDocument, stableJson } from './document.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const file = path.join(root, 'schema', 'openapi.json');
const json = stableJson(openApiDocument(await getSchema(), ALL_ROUTES));

if (process.argv.includes('--check')) {
  const committed = await fs.readFile(file, 'utf8').catch(() => '');
  if (committed !== json) {
    console.error('schema/openapi.json is stale: run `npm run openapi` and commit it');
    process.exit(1);
  }
  console.log('schema/openapi.json is up to date');
} else {
  await fs.writeFile(file, json);
  console.log(`wrote ${path.relative(root, file)}`);
}
