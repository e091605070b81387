import { getOperationAST, isNonNullType, type GraphQLSchema } from 'graphql';
import { ANSWERS } from '../../src/errors/answers.js';
import { VERSION } from '../../src/version.js';
import { resultShape, variableTypes, type FieldShape } from '../convert.js';
import { ENVELOPE, type RestRoute } from '../route.js';
import {
  authenticated,
  errorResponse,
  HEADERS,
  IF_NONE_MATCH,
  NO_CONTENT,
  NOT_MODIFIED,
  PARAMETERS,
  sharedResponses,
} from './responses.js';
import { bodySchema, inputSchema, notNull, objectSchema, type JsonSchema } from './schemas.js';
import { allErrorStatuses, errorStatuses } from './statuses.js';

const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'Every REST error: a stable code, a sentence, the invalid fields, and the id of the request (also in X-Request-Id).',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: [...new Set(Object.values(ANSWERS).map((answer) => answer.rest))].sort() },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            properties: { field: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
            required: ['field', 'code', 'message'],
          },
        },
      },
      required: ['code', 'message', 'details'],
    },
    request_id: { type: 'string' },
  },
  required: ['error', 'request_id'],
};

/** The shape at `path` in a result shape (the route's resultPath, checked here against the selection). */
function shapeAt(shape: FieldShape[], path: readonly string[], route: RestRoute): FieldShape {
  let fields = shape;
  let found: FieldShape | undefined;
  for (const key of path) {
    found = fields.find((field) => field.restKey === key);
    if (!found) throw new Error(`${route.method} ${route.path}: resultPath ${path.join('.')} is not in its operation's result`);
    fields = found.children ?? [];
  }
  if (!found) throw new Error(`${route.method} ${route.path}: empty resultPath`);
  return found;
}

/** The schema of a route's answer, from its operation's selection as the facade converts it. */
function answerSchema(schema: GraphQLSchema, route: RestRoute): JsonSchema | null {
  if (route.kind === 'empty') return null;
  const at = shapeAt(resultShape(schema, route.document), route.resultPath, route);
  const children = at.children ?? [];
  if (route.kind === 'envelope') {
    const page = Object.fromEntries(children.map((field) => [field.restKey, field]));
    const properties: Record<string, JsonSchema> = {};
    for (const [name, field] of Object.entries(ENVELOPE)) {
      const source = page[field];
      if (!source) throw new Error(`${route.method} ${route.path}: an envelope's page selects no ${field}`);
      properties[name] = (objectSchema([{ ...source, restKey: name }]).properties as Record<string, JsonSchema>)[name]!;
    }
    return { type: 'object', properties, required: Object.keys(ENVELOPE), additionalProperties: false };
  }
  if (!at.children) throw new Error(`${route.method} ${route.path}: a ${route.kind} route's answer must be an object`);
  if (route.kind === 'array') return { type: 'array', items: objectSchema(children) };
  if (route.spread === null) return objectSchema(children);
  // The object at `spread`, with the other fields beside it when they are set.
  const inner = shapeAt(children, [route.spread], route);
  const record = objectSchema(inner.children ?? []);
  const beside = objectSchema(children.filter((field) => field !== inner));
  const besideProperties = Object.entries(beside.properties as Record<string, JsonSchema>).map(([name, property]) => [
    name,
    notNull(property),
  ]);
  return { ...record, properties: { ...(record.properties as object), ...Object.fromEntries(besideProperties) } };
}

/** The operation's request body, in the REST dialect, less what the path sets. */
function requestBody(schema: GraphQLSchema, route: RestRoute): JsonSchema | null {
  if (!route.body) return null;
  const variables = variableTypes(schema, route.document);
  const variable = (name: string) => {
    const type = variables.get(name);
    if (!type) throw new Error(`${route.method} ${route.path}: the body names $${name}, which its operation does not declare`);
    return type;
  };
  let body: JsonSchema;
  if ('input' in route.body) body = bodySchema(variable(route.body.input), route.body.fromPath ?? []);
  else {
    const names = route.body.variables;
    body = {
      type: 'object',
      properties: Object.fromEntries(names.map((name) => [name, inputSchema(variable(name))])),
      required: names.filter((name) => isNonNullType(variable(name))),
    };
  }
  return { required: true, content: body };
}

/** A path's parameters, shared by its operations. */
function pathParameters(route: RestRoute): JsonSchema[] {
  return [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    // Numbers in paths (issues, pull requests) are positive integers; anything else cannot exist (404).
    schema: name === 'number' ? { type: 'integer', minimum: 1 } : { type: 'string' },
  }));
}

/** Query parameters, typed by the operation's variables of the same name. */
function queryParameters(schema: GraphQLSchema, route: RestRoute): JsonSchema[] {
  const variables = variableTypes(schema, route.document);
  return route.query.map(({ name, description }) => {
    const type = variables.get(name);
    if (!type) throw new Error(`${route.method} ${route.path}: query parameter ${name} is no variable of its operation`);
    const value = notNull(inputSchema(type));
    if (name === 'limit' || name === 'offset') value.minimum = 0;
    return { name, in: 'query', required: false, description, schema: value };
  });
}

const KIND_DESCRIPTIONS: Record<RestRoute['kind'], string> = {
  record: 'The record.',
  envelope: 'One page of records: data, the total, the limit and offset used, and whether more follow.',
  array: 'Every record.',
  empty: 'Done; no body.',
};

const pascal = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** A stable, unique operation id: the method and the path's words (`getReposIdIssuesNumber`). */
function operationId(method: string, route: RestRoute): string {
  const words = `${method}${route.path}`.split(/[/:_]+/).filter(Boolean);
  return words[0]! + words.slice(1).map(pascal).join('');
}

/** The error responses of a route, by the one rule (statuses.ts); a HEAD's without their body. */
function errorResponses(route: RestRoute, head: boolean, all: Map<number, string[]>): Record<string, unknown> {
  return Object.fromEntries(
    [...errorStatuses(route)].map(([status, codes]) => {
      // The shared response names every code of its status; a route that answers fewer names its own.
      const own = codes.length < (all.get(status)?.length ?? 0) ? codes : null;
      return [String(status), errorResponse(status, own, head)];
    }),
  );
}

/** Where the document is served from: the facade answers the same paths at the root and under /api. */
const SERVERS = [
  { url: '/', description: 'The service itself: every path at its root.' },
  { url: '/api', description: 'The same API under /api, for a proxy that routes by prefix.' },
];

const DESCRIPTION = [
  'The REST facade of Cairn: each route runs one GraphQL operation. Every path is served under each',
  'server, `/` and `/api` alike. Records are snake_case; enum values are answered in lower case and',
  'taken in either case. Every GET also answers HEAD: the same status and headers, without the body.',
  'A method a path does not list is answered 405 with `Allow` (components.responses.MethodNotAllowed).',
].join(' ');

/** The OpenAPI 3.1 description of the REST facade, generated from its routes and the GraphQL schema. */
export function openApiDocument(schema: GraphQLSchema, routes: RestRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const all = allErrorStatuses(routes);
  // Answers and bodies by operation name, shared by the webhook families.
  const schemas: Record<string, JsonSchema> = { Error: ERROR_SCHEMA };
  const named = (name: string, value: JsonSchema) => {
    schemas[name] = value;
    return { $ref: `#/components/schemas/${name}` };
  };
  for (const route of routes) {
    const name = getOperationAST(route.document)?.name?.value ?? '';
    const answer = answerSchema(schema, route);
    const body = requestBody(schema, route);
    if (body) body.content = { 'application/json': { schema: named(`${name}Body`, body.content as JsonSchema) } };
    // A successful GET of a record or list carries an ETag, and is 304 when If-None-Match names it (conditional.ts).
    const conditional = route.method === 'get' && route.status === 200 && answer !== null;
    const success = answer
      ? {
          description: KIND_DESCRIPTIONS[route.kind],
          headers: conditional ? authenticated('ETag') : authenticated(),
          content: { 'application/json': { schema: named(`${name}Answer`, answer) } },
        }
      : NO_CONTENT;
    const operation = (method: string, head: boolean) => ({
      operationId: operationId(method, route),
      summary: head ? `GraphQL operation ${name}: the headers of its GET alone` : `GraphQL operation ${name}`,
      parameters: [...queryParameters(schema, route), ...(conditional ? [IF_NONE_MATCH] : [])],
      ...(body ? { requestBody: body } : {}),
      responses: {
        [String(route.kind === 'empty' ? 204 : route.status)]:
          head && 'content' in success ? { description: success.description, headers: success.headers } : success,
        ...(conditional ? { '304': NOT_MODIFIED } : {}),
        ...errorResponses(route, head, all),
      },
    });
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= { parameters: pathParameters(route) };
    paths[path][route.method] = operation(route.method, false);
    if (route.method === 'get') paths[path].head = operation('head', true);
  }
  const responses = sharedResponses(all);
  // Only what an operation refers to, and the 405 of a method a path does not list.
  const used = new Set([...JSON.stringify(paths).matchAll(/#\/components\/responses\/(\w+)/g)].map(([, n]) => n));
  return {
    openapi: '3.1.0',
    info: { title: 'Cairn REST API', version: VERSION, description: DESCRIPTION },
    servers: SERVERS,
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      headers: HEADERS,
      parameters: PARAMETERS,
      responses: Object.fromEntries(Object.entries(responses).filter(([n]) => used.has(n) || n === 'MethodNotAllowed')),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A personal access token.' } },
    },
  };
}

/** Deterministic JSON: keys sorted at every level, two-space indented, a final newline. */
export function stableJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((key) => [key, sorted((v as Record<string, unknown>)[key])]),
          )
        : v;
  return JSON.stringify(sorted(value), null, 2) + '\n';
}
