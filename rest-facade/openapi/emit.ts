/**
 * Writes the REST facade's OpenAPI document to schema/openapi.json, or with --check exits 1 when
 * the committed file is stale (test/openapi.test.ts runs the check). Every operation of the facade
 * is prepared first, as its first request would prepare it: one that does not match the schema
 * (a wrong field, an unused variable) stops it here rather than answering 500 in production.
 */
import { getSchema } from '../../src/schema.js';
import { writeOrCheck } from '../../src/scripts/generated-file.js';
import { ALL_ROUTES } from '../index.js';
import { RestOperation } from '../operation.js';
import { openApiDocument, stableJson } from './document.js';

const schema = await getSchema();
for (const route of ALL_ROUTES) {
  for (const document of [route.document, route.reuse]) if (document) new RestOperation(schema, document).prepare();
}
await writeOrCheck('schema/openapi.json', stableJson(openApiDocument(schema, ALL_ROUTES)), 'npm run openapi');
