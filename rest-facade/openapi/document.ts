import { getOperationAST, isNonNullType, type GraphQLSchema } from 'graphql';
import { ANSWERS } from '../../src/errors/answers.js';
import type { ErrorCode } from '../../src/errors/domain-error.js';
import { VERSION } from '../../src/version.js';
import { resultShape, variableTypes, type FieldShape } from '../convert.js';
import { ENVELOPE, type RestRoute } from '../route.js';
import { bodySchema, inputSchema, notNull, objectSchema, type JsonSchema } from './schemas.js';

/** The prefixes the facade is mounted at (index.ts): every path is listed under each. */
const PREFIXES = ['', '/api'];

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

/**
 * The error codes a route can answer, by what it takes: every route a token and a budget (and may
 * fail, or find the database away), a path naming something (which may not exist or not be the
 * caller's), query parameters, a body; a write may find the disk full.
 */
function errorCodes(route: RestRoute): ErrorCode[] {
  // Any route refuses a query parameter it does not read (400).
  const codes: ErrorCode[] = ['UNAUTHENTICATED', 'FORBIDDEN', 'RATE_LIMITED', 'INTERNAL', 'UNAVAILABLE', 'BAD_REQUEST'];
  if (route.method !== 'get') codes.push('INSUFFICIENT_STORAGE');
  if (route.path.includes(':') || route.resultPath.length > 1 || route.method !== 'get') codes.push('NOT_FOUND');
  // A path segment that is not validly percent-encoded (400), or text no column can hold (422).
  if (route.path.includes(':')) codes.push('BAD_REQUEST', 'VALIDATION_FAILED');
  if (route.query.some(({ name }) => name === 'limit' || name === 'offset')) codes.push('INVALID_PAGINATION');
  if (route.query.length) codes.push('VALIDATION_FAILED');
  if (route.body) codes.push('BAD_REQUEST', 'INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_FAILED');
  if (route.method !== 'get') codes.push('CONFLICT', 'VALIDATION_FAILED');
  if (route.path.endsWith('/merge')) codes.push('NOT_MERGEABLE');
  return codes;
}

/** Error responses by status, each naming the `error.code`s it carries (src/errors/answers.ts). */
function errorResponses(route: RestRoute): Record<string, JsonSchema> {
  const byStatus = new Map<number, Set<string>>();
  for (const code of errorCodes(route)) {
    const { status, rest } = ANSWERS[code];
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(rest));
  }
  return Object.fromEntries(
    [...byStatus].map(([status, codes]) => [
      String(status),
      {
        description: `error.code: ${[...codes].sort().join(', ')}`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
}

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

/** Path and query parameters, typed by the operation's variables where one of that name exists. */
function parameters(schema: GraphQLSchema, route: RestRoute): JsonSchema[] {
  const variables = variableTypes(schema, route.document);
  const pathParams = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    // Numbers in paths (issues, pull requests) are positive integers; anything else cannot exist (404).
    schema: name === 'number' ? { type: 'integer', minimum: 1 } : { type: 'string' },
  }));
  const queryParams = route.query.map(({ name, description }) => {
    const type = variables.get(name);
    if (!type) throw new Error(`${route.method} ${route.path}: query parameter ${name} is no variable of its operation`);
    const value = notNull(inputSchema(type));
    if (name === 'limit' || name === 'offset') value.minimum = 0;
    return { name, in: 'query', required: false, description, schema: value };
  });
  return [...pathParams, ...queryParams];
}

const KIND_DESCRIPTIONS: Record<RestRoute['kind'], string> = {
  record: 'The record.',
  envelope: 'One page of records: data, the total, the limit and offset used, and whether more follow.',
  array: 'Every record.',
  empty: 'Done; no body.',
};

const pascal = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** A stable, unique operation id: the method and the path's words (`getReposIdIssuesNumber`), prefixed for /api. */
function operationId(prefix: string, route: RestRoute): string {
  const words = `${prefix}/${route.method}${route.path}`.split(/[/:_]+/).filter(Boolean);
  return words[0]! + words.slice(1).map(pascal).join('');
}

/** Conditional GETs: every record or list answer carries an ETag, and If-None-Match naming it is answered 304. */
const ETAG_HEADER = { description: 'A weak tag of this answer; send it back in If-None-Match.', schema: { type: 'string' } };
const IF_NONE_MATCH = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description: 'ETags of answers the client holds; when one is still current the answer is 304 without a body.',
  schema: { type: 'string' },
};
const NOT_MODIFIED = { description: 'Not Modified: the answer is still the one the If-None-Match named.', headers: { ETag: ETAG_HEADER } };

/** The OpenAPI 3.1 description of the REST facade, generated from its routes and the GraphQL schema. */
export function openApiDocument(schema: GraphQLSchema, routes: RestRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  // Answers and bodies by operation name, shared by the paths of both prefixes (and the webhook families).
  const schemas: Record<string, JsonSchema> = { Error: ERROR_SCHEMA };
  const named = (name: string, value: JsonSchema) => {
    schemas[name] = value;
    return { $ref: `#/components/schemas/${name}` };
  };
  for (const prefix of PREFIXES) {
    for (const route of routes) {
      const name = getOperationAST(route.document)?.name?.value ?? '';
      const answer = answerSchema(schema, route);
      const body = requestBody(schema, route);
      if (body) body.content = { 'application/json': { schema: named(`${name}Body`, body.content as JsonSchema) } };
      const conditional = route.method === 'get' && answer !== null;
      const success = answer
        ? {
            description: KIND_DESCRIPTIONS[route.kind],
            ...(conditional ? { headers: { ETag: ETAG_HEADER } } : {}),
            content: { 'application/json': { schema: named(`${name}Answer`, answer) } },
          }
        : { description: KIND_DESCRIPTIONS.empty };
      const path = prefix + route.path.replace(/:(\w+)/g, '{$1}');
      paths[path] ??= {};
      paths[path][route.method] = {
        operationId: operationId(prefix, route),
        summary: `GraphQL operation ${name}`,
        security: [{ bearer: [] }],
        parameters: [...parameters(schema, route), ...(conditional ? [IF_NONE_MATCH] : [])],
        ...(body ? { requestBody: body } : {}),
        responses: {
          [String(route.kind === 'empty' ? 204 : route.status)]: success,
          ...(conditional ? { '304': NOT_MODIFIED } : {}),
          ...errorResponses(route),
        },
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cairn REST API',
      version: VERSION,
      description: 'The REST facade of Cairn: every path is served under / and under /api alike.',
    },
    paths,
    components: {
      schemas,
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
