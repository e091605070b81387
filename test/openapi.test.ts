import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ALL_ROUTES } from '../rest-facade/index.js';
import { adminClient, createUser, type Client } from './support/client.js';
import { checkAgainstOpenApi } from './support/openapi.js';
import { CairnServer, ROOT } from './support/server.js';

/**
 * The REST facade's OpenAPI 3.1 document: generated from the routes (never edited), committed,
 * valid OpenAPI, served without a token. test/support/client.ts checks every REST answer of the
 * suite against it.
 */
const run = promisify(execFile);
const committed = readFileSync(path.join(ROOT, 'schema', 'openapi.json'), 'utf8');
const document = JSON.parse(committed) as {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters: Array<{ name: string; in: string }> }>>;
};

let server: CairnServer;
let alice: Client;

beforeAll(async () => {
  server = CairnServer.sharedServer();
  alice = await createUser(adminClient(server), 'openapi-alice');
});
afterAll(() => server.destroy());

test('schema/openapi.json is what `npm run openapi` writes from the routes', async () => {
  const { stdout } = await run(process.execPath, [path.join(ROOT, 'dist/rest-facade/openapi/emit.js'), '--check'], { cwd: ROOT });
  expect(stdout).toContain('up to date');
});

test('it is a valid OpenAPI 3.1 document', async () => {
  const validator = new Validator();
  const result = await validator.validate(JSON.parse(committed) as Parameters<Validator['validate']>[0]);
  expect(result.errors).toBeUndefined();
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
});

test('every route is listed under / and /api, with its path parameters and the statuses every route answers', () => {
  for (const route of ALL_ROUTES) {
    const template = route.path.replace(/:(\w+)/g, '{$1}');
    for (const prefix of ['', '/api']) {
      const operation = document.paths[prefix + template]?.[route.method];
      expect(operation).toBeDefined();
      const pathParams = operation!.parameters.filter((p) => p.in === 'path').map((p) => p.name);
      expect(pathParams).toEqual([...route.path.matchAll(/:(\w+)/g)].map(([, name]) => name));
      expect(operation!.parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(route.query.map((q) => q.name));
      expect(Object.keys(operation!.responses)).toEqual(
        expect.arrayContaining([String(route.kind === 'empty' ? 204 : route.status), '401', '429', '500']),
      );
      if (route.body) expect(Object.keys(operation!.responses)).toEqual(expect.arrayContaining(['400', '413', '415', '422']));
    }
  }
  expect(Object.keys(document.paths)).toHaveLength(2 * new Set(ALL_ROUTES.map((r) => r.path)).size);
});

test('GET /openapi.json answers the document without a token', async () => {
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await response.text()).toBe(committed);
  const post = await fetch(`${server.url}/openapi.json`, { method: 'POST' });
  expect(post.status).toBe(405);
});

test('the suite checks answers against it: a drifted answer fails the request that got it', async () => {
  const created = await alice.post('/repos', { name: 'described' });
  expect(created.status).toBe(201);
  const get = (body: unknown) => () => checkAgainstOpenApi('GET', `/api/repos/${created.body.id}`, 200, JSON.stringify(body), body);
  expect(get(created.body)).not.toThrow();
  expect(get({ ...created.body, defaultBranch: 'main' })).toThrow(/GET \/api\/repos\/\{id\} 200: .*additional properties/);
  expect(get({ ...created.body, private: 'no' })).toThrow(/\/private must be boolean/);
  expect(() => checkAgainstOpenApi('GET', '/repos', 418, '{}', {})).toThrow(/status 418 is not documented/);
  expect(() => checkAgainstOpenApi('GET', '/no/such/path', 404, '{}', {})).toThrow(/not the error body/);
  // An answer the service really gives, through the client: a made-up path is the error body.
  expect((await alice.get('/no/such/path')).status).toBe(404);
});
