import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ALL_ROUTES } from '../rest-facade/index.js';
import { adminClient, createUser, type Client } from './support/client.js';
import { GitSandbox } from './support/git.js';
import { checkAgainstOpenApi } from './support/openapi.js';
import { PullRepo } from './support/pulls.js';
import { CairnServer, ROOT } from './support/server.js';

/**
 * The REST facade's OpenAPI 3.1 document: generated from the routes (never edited), committed,
 * valid OpenAPI, served without a token. test/support/client.ts checks every REST answer of the
 * suite against it; here, the statuses each route lists, and the headers real answers carry.
 */
const run = promisify(execFile);
const committed = readFileSync(path.join(ROOT, 'schema', 'openapi.json'), 'utf8');

interface Reference {
  $ref?: string;
}
interface Header extends Reference {
  required?: boolean;
}
interface Response extends Reference {
  description: string;
  headers?: Record<string, Header>;
  content?: unknown;
}
interface Operation {
  operationId: string;
  summary: string;
  responses: Record<string, Response>;
  parameters: Array<{ name: string; in: string }>;
}
interface Document {
  openapi: string;
  servers: Array<{ url: string }>;
  security: unknown;
  paths: Record<string, Record<string, Operation> & { parameters: Array<{ name: string; in: string }> }>;
  components: {
    schemas: Record<string, { properties: Record<string, { enum?: string[] }> }>;
    headers: Record<string, Header>;
    responses: Record<string, Response>;
    parameters: Record<string, unknown>;
  };
}
const document = JSON.parse(committed) as Document;

/** A response, or the shared one it refers to. */
const resolved = (response: Response): Response =>
  response.$ref ? document.components.responses[response.$ref.replace('#/components/responses/', '')]! : response;
const resolvedHeader = (header: Header): Header =>
  header.$ref ? document.components.headers[header.$ref.replace('#/components/headers/', '')]! : header;

let server: CairnServer;
let git: GitSandbox;
let alice: Client & { login: string };

beforeAll(async () => {
  server = CairnServer.sharedServer();
  git = await GitSandbox.create();
  alice = await createUser(adminClient(server), 'openapi-alice');
});
afterAll(async () => {
  await server.destroy();
  await git?.cleanup();
});

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

test("it passes the checks of Redocly's recommended rules that the validator does not make", () => {
  // Servers: present, relative, no trailing slash but the root's (no-empty-servers, no-server-trailing-slash).
  expect(document.servers.map(({ url }) => url)).toEqual(['/', '/api']);
  // Every reference resolves (no-unresolved-refs), and every component is referred to (no-unused-components)
  // but the 405 of a method a path does not list, which no operation can name.
  const text = JSON.stringify(document);
  const referred = new Set([...text.matchAll(/"\$ref":"#\/components\/(\w+)\/([^"]+)"/g)].map(([, kind, name]) => `${kind}/${name}`));
  for (const target of referred) {
    const [kind, name] = target.split('/') as [keyof Document['components'], string];
    expect({ target, found: Boolean(document.components[kind]?.[name]) }).toEqual({ target, found: true });
  }
  const components = Object.entries(document.components)
    .filter(([kind]) => kind !== 'securitySchemes')
    .flatMap(([kind, entries]) => Object.keys(entries).map((name) => `${kind}/${name}`));
  expect(components.filter((component) => !referred.has(component))).toEqual(['responses/MethodNotAllowed']);
  // Operations: unique, URL-safe ids, a summary, a 2xx and a 4xx answer (operation-*).
  const operations = Object.values(document.paths).flatMap(
    (item) => Object.entries(item).filter(([method]) => method !== 'parameters') as Array<[string, Operation]>,
  );
  const ids = operations.map(([, operation]) => operation.operationId);
  expect(new Set(ids).size).toBe(ids.length);
  for (const [, operation] of operations) {
    expect(operation.operationId).toMatch(/^[A-Za-z0-9]+$/);
    expect(operation.summary).toBeTruthy();
    expect(Object.keys(operation.responses).some((status) => /^2/.test(status))).toBe(true);
    expect(Object.keys(operation.responses).some((status) => /^4/.test(status))).toBe(true);
  }
  expect(document.security).toEqual([{ bearer: [] }]);
});

test('every route is listed once, served under each server, with HEAD beside each GET', () => {
  for (const route of ALL_ROUTES) {
    const item = document.paths[route.path.replace(/:(\w+)/g, '{$1}')]!;
    const operation = item[route.method]!;
    expect(operation).toBeDefined();
    expect(item.parameters.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(
      [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => name),
    );
    expect(operation.parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(route.query.map((q) => q.name));
    if (route.method === 'get') {
      expect(Object.keys(item.head!.responses)).toEqual(Object.keys(operation.responses));
      for (const response of Object.values(item.head!.responses)) expect(resolved(response).content).toBeUndefined();
    }
  }
  expect(Object.keys(document.paths)).toHaveLength(new Set(ALL_ROUTES.map((r) => r.path)).size);
});

test("each route lists the statuses it can answer, by the route's shape, not one list for all", () => {
  for (const route of ALL_ROUTES) {
    const responses = document.paths[route.path.replace(/:(\w+)/g, '{$1}')]![route.method]!.responses;
    const has = (status: number) => String(status) in responses;
    const named = `${route.method} ${route.path}`;
    const conditional = route.method === 'get' && route.kind !== 'empty';
    // Every REST route needs a token, charges the budget, refuses a query parameter it does not read.
    for (const status of [401, 429, 400, 500, 503]) expect({ named, status, listed: has(status) }).toEqual({ named, status, listed: true });
    expect({ named, listed: has(route.kind === 'empty' ? 204 : route.status) }).toEqual({ named, listed: true });
    expect({ named, status: 404, listed: has(404) }).toEqual({ named, status: 404, listed: route.path.includes(':') });
    for (const status of [408, 413, 415])
      expect({ named, status, listed: has(status) }).toEqual({ named, status, listed: route.body !== null });
    expect({ named, status: 304, listed: has(304) }).toEqual({ named, status: 304, listed: conditional });
    expect({ named, status: 409, listed: has(409) }).toEqual({ named, status: 409, listed: route.answers.includes('CONFLICT') });
    expect({ named, status: 507, listed: has(507) }).toEqual({ named, status: 507, listed: route.method !== 'get' });
    const paged = route.query.some((q) => q.name === 'limit');
    // A reference's own description overrides its target's: a route answering fewer codes names its own.
    const codes400 = responses['400']!.description ?? resolved(responses['400']!).description;
    expect({ named, paged: /invalid_pagination/.test(codes400) }).toEqual({ named, paged });
    const success = responses[String(route.status)];
    expect({ named, etag: success ? 'ETag' in (resolved(success).headers ?? {}) : false }).toEqual({ named, etag: conditional });
  }
});

test('enum values are taken in either case (the review `event` as the docs spell it, APPROVE), and answered in lower case', () => {
  const event = document.components.schemas.SubmitReviewBody!.properties.event;
  expect(event.enum).toEqual(expect.arrayContaining(['APPROVE', 'REQUEST_CHANGES', 'COMMENT', 'approve', 'request_changes', 'comment']));
  const enums = (schema: unknown, found: string[][] = []): string[][] => {
    if (Array.isArray(schema)) schema.forEach((item) => enums(item, found));
    else if (schema && typeof schema === 'object') {
      const { enum: values, ...rest } = schema as { enum?: unknown[] };
      if (values) found.push(values.filter((v): v is string => typeof v === 'string'));
      Object.values(rest).forEach((item) => enums(item, found));
    }
    return found;
  };
  const taken = [
    ...Object.entries(document.components.schemas).filter(([name]) => name.endsWith('Body')),
    ...Object.values(document.paths).flatMap((item) =>
      Object.values(item).flatMap((operation) => (operation as Operation).parameters ?? []),
    ),
  ];
  expect(enums(taken).length).toBeGreaterThan(10);
  for (const values of enums(taken)) expect(values).toEqual(expect.arrayContaining(values.map((v) => v.toUpperCase())));
  const answered = Object.entries(document.components.schemas).filter(([name]) => name.endsWith('Answer'));
  for (const values of enums(answered)) expect(values).toEqual(values.map((v) => v.toLowerCase()));
});

describe('what the service answers is what the document declares: statuses and headers', () => {
  /** Headers the document describes (components.headers), in lower case. */
  const described = () => Object.keys(document.components.headers).map((name) => name.toLowerCase());

  /**
   * The answer's status is declared for its operation (or, for a method the path does not list, is
   * the shared 405), every described header it carries is declared for that status, and every
   * header declared required is there.
   */
  function expectDeclared(method: string, url: string, answer: { status: number; headers: Headers; text: string }) {
    const template = Object.keys(document.paths).find((p) =>
      new RegExp(`^(/api)?${p.replace(/\{\w+\}/g, '[^/]+')}$`).test(new URL(url, 'http://x').pathname),
    )!;
    expect(template).toBeDefined();
    const operation = document.paths[template]![method.toLowerCase()];
    const listed = operation ? operation.responses[String(answer.status)] : document.components.responses.MethodNotAllowed;
    const at = `${method} ${url} ${answer.status}`;
    expect({ at, declared: listed !== undefined }).toEqual({ at, declared: true });
    const declared = Object.entries(resolved(listed!).headers ?? {}).map(([name, header]) => ({
      name: name.toLowerCase(),
      required: resolvedHeader(header).required === true,
    }));
    const carried = [...answer.headers.keys()].filter((name) => described().includes(name));
    expect({ at, undeclared: carried.filter((name) => !declared.some((d) => d.name === name)) }).toEqual({ at, undeclared: [] });
    expect({ at, missing: declared.filter((d) => d.required && !answer.headers.has(d.name)).map((d) => d.name) }).toEqual({
      at,
      missing: [],
    });
    expect(answer.headers.get('x-request-id')).toBeTruthy();
    if (method === 'HEAD' || answer.status === 304 || answer.status === 204) expect(answer.text).toBe('');
  }

  let repoId: string;
  beforeAll(async () => {
    const created = await alice.post('/repos', { name: 'declared', auto_init: true });
    expect(created.status).toBe(201);
    repoId = created.body.id;
  });

  test('GET and HEAD, with and without a current ETag; a 404 and a 401', async () => {
    const path = `/repos/${repoId}`;
    const got = await alice.get(path);
    expectDeclared('GET', path, got);
    const tag = got.headers.get('etag')!;
    expect(tag).toMatch(/^W\//);
    const head = await alice.request('HEAD', `/api${path}`);
    expect({ status: head.status, etag: head.headers.get('etag') }).toEqual({ status: 200, etag: tag });
    expectDeclared('HEAD', `/api${path}`, head);
    for (const method of ['GET', 'HEAD']) {
      const unchanged = await alice.request(method, path, { headers: { 'if-none-match': tag } });
      expect(unchanged.status).toBe(304);
      expectDeclared(method, path, unchanged);
    }
    for (const method of ['GET', 'HEAD']) {
      const missing = await alice.request(method, '/repos/repo_nothing_here');
      expect(missing.status).toBe(404);
      expectDeclared(method, '/repos/repo_nothing_here', missing);
    }
    const anonymous = await alice.get(path, { anonymous: true });
    expect(anonymous.status).toBe(401);
    expectDeclared('GET', path, anonymous);
  });

  test('a method the path does not answer: 405 with Allow, as the shared MethodNotAllowed says', async () => {
    const path = `/repos/${repoId}/issues`;
    const refused = await alice.delete(path);
    expect({ status: refused.status, allow: refused.headers.get('allow') }).toEqual({ status: 405, allow: 'GET, HEAD, POST' });
    expectDeclared('DELETE', path, refused);
  });

  test('refused requests: an unread query parameter, bad paging, bad JSON, another type, too large, wrong values, a conflict', async () => {
    const cases: Array<[string, string, Parameters<Client['request']>[2], number]> = [
      ['GET', '/user/webhooks?limit=5', {}, 400],
      ['GET', `/repos/${repoId}/issues?limit=abc`, {}, 400],
      ['POST', '/repos', { raw: '{"name":', headers: { 'content-type': 'application/json' } }, 400],
      ['POST', '/repos', { raw: 'name=x', headers: { 'content-type': 'text/plain' } }, 415],
      ['POST', '/repos', { raw: Buffer.alloc(1024 * 1024 + 1, 32), headers: { 'content-type': 'application/json' } }, 413],
      ['POST', '/repos', { body: { name: 'declared-422', private: 'no' } }, 422],
      ['POST', '/repos', { body: { name: 'declared' } }, 409],
    ];
    for (const [method, url, options, status] of cases) {
      const answer = await alice.request(method, url, options);
      expect({ method, url, status: answer.status }).toEqual({ method, url, status });
      expectDeclared(method, url, answer);
    }
  });

  test('a review sent as the docs spell it (APPROVE) and in lower case; a merge refused (405, no Allow); a delete (204)', async () => {
    const repo = await PullRepo.create(server, git, alice, 'declared-pulls');
    await repo.commit('feature', 'a change', { 'a.txt': 'a\n' });
    await repo.push(['feature']);
    const opened = await repo.open({ title: 'a change', head: 'feature' });
    expect(opened.status).toBe(201);
    const reviews = `/repos/${repo.id}/pulls/${opened.body.number}/reviews`;
    // Another user's approval, as the docs spell the event; the author's own comment, in lower case.
    const bob = await createUser(adminClient(server), 'openapi-bob');
    for (const [event, reviewer] of [
      ['APPROVE', bob],
      ['comment', alice],
    ] as const) {
      const review = await reviewer.post(reviews, { event, body: 'seen' });
      expect({ event, status: review.status, error: review.body.error }).toEqual({ event, status: 201, error: undefined });
      expectDeclared('POST', reviews, review);
    }
    // A draft cannot be merged: 405 not_mergeable, which is no method refused (no Allow).
    expect((await alice.patch(`/repos/${repo.id}/pulls/${opened.body.number}`, { draft: true })).status).toBe(200);
    const merge = `/repos/${repo.id}/pulls/${opened.body.number}/merge`;
    const refused = await alice.put(merge, {});
    expect({ status: refused.status, code: refused.body.error.code, allow: refused.headers.get('allow') }).toEqual({
      status: 405,
      code: 'not_mergeable',
      allow: null,
    });
    expectDeclared('PUT', merge, refused);
    expect((await alice.post(`/repos/${repo.id}/labels`, { name: 'gone', color: '00ff00' })).status).toBe(201);
    const deleted = await alice.delete(`/repos/${repo.id}/labels/gone`);
    expect(deleted.status).toBe(204);
    expectDeclared('DELETE', `/repos/${repo.id}/labels/gone`, deleted);
  });
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
  expect(get({ ...created.body, defaultBranch: 'main' })).toThrow(/GET \/repos\/\{id\} 200: .*additional properties/);
  expect(get({ ...created.body, private: 'no' })).toThrow(/\/private must be boolean/);
  expect(() => checkAgainstOpenApi('GET', '/repos', 418, '{}', {})).toThrow(/status 418 is not documented/);
  expect(() => checkAgainstOpenApi('GET', '/no/such/path', 404, '{}', {})).toThrow(/not the error body/);
  // An answer the service really gives, through the client: a made-up path is the error body.
  expect((await alice.get('/no/such/path')).status).toBe(404);
});
