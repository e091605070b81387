/**
 * Writes the REST facade's OpenAPI document to schema/openapi.json, or with --check exits 1 when
 * the committed file is stale (test/openapi.test.ts runs the check).
 */
import { getSchema } from '../../src/schema.js';
import { writeOrCheck } from '../../src/scripts/generated-file.js';
import { ALL_ROUTES } from '../index.js';
import { openApiDocument, stableJson } from './document.js';

await writeOrCheck('schema/openapi.json', stableJson(openApiDocument(await getSchema(), ALL_ROUTES)), 'npm run openapi');
