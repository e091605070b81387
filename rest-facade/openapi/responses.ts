import type { JsonSchema } from './schemas.js';

/**
 * The headers and shared responses of the document (`components.headers`, `.parameters`,
 * `.responses`): described once, referenced by every operation, so the document stays small.
 */

const ref = (kind: 'headers' | 'parameters' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const text = (description: string, required = false): JsonSchema => ({ description, required, schema: { type: 'string' } });
const integer = (description: string): JsonSchema => ({ description, schema: { type: 'integer', minimum: 0 } });

export const HEADERS: Record<string, JsonSchema> = {
  'X-Request-Id': text(
    'The id of this request, also `request_id` of an error and in the log; a sane incoming `X-Request-Id` is echoed.',
    true,
  ),
  ETag: text('A weak tag of this answer; send it back in If-None-Match to be answered 304 while it is still current.', true),
  'X-RateLimit-Limit': integer("The caller's requests per hour, all their tokens together (absent when the service sets no limit)."),
  'X-RateLimit-Remaining': integer('What is left of it.'),
  'X-RateLimit-Reset': integer('When the budget is whole again, in seconds since the epoch.'),
  'X-RateLimit-Used': integer('What has been used of it.'),
  'X-RateLimit-Resource': text('Which budget these headers describe (`core`).'),
  'Retry-After': integer('Seconds to wait before asking again.'),
  Allow: text('The methods this path answers.', true),
  'WWW-Authenticate': text('`Bearer realm="Cairn"`: how to authenticate.', true),
};

/** The budget's headers, on every answer to an authenticated request (all but a 401). */
const RATE_LIMIT = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-RateLimit-Used', 'X-RateLimit-Resource'];

/** Header references by name: what an answer carries. */
function headers(...names: string[]): Record<string, unknown> {
  return Object.fromEntries(names.map((name) => [name, ref('headers', name)]));
}

/** The headers of an answer to an authenticated request, `more` beside them. */
export const authenticated = (...more: string[]) => headers('X-Request-Id', ...RATE_LIMIT, ...more);

export const PARAMETERS: Record<string, JsonSchema> = {
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'ETags of answers the client holds; when one is still current the answer is 304 without a body.',
    schema: { type: 'string' },
  },
};
export const IF_NONE_MATCH = ref('parameters', 'IfNoneMatch');

const ERROR_CONTENT = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

/** Each error status an operation can answer: its component's name, what it means, the headers beside the body. */
const ERRORS: Record<number, { name: string; description: string; headers: Record<string, unknown> }> = {
  400: { name: 'BadRequest', description: 'The request cannot be read as the route takes it.', headers: authenticated() },
  401: {
    name: 'Unauthorized',
    description: 'No token, or one malformed, unknown, revoked or expired.',
    headers: headers('X-Request-Id', 'WWW-Authenticate'),
  },
  403: { name: 'Forbidden', description: "The token's scopes or the caller's permission do not allow it.", headers: authenticated() },
  404: { name: 'NotFound', description: 'What the path names does not exist, or is not visible to the caller.', headers: authenticated() },
  405: { name: 'NotMergeable', description: 'The pull request cannot be merged as it is.', headers: authenticated() },
  408: { name: 'RequestTimeout', description: 'The body did not arrive in time; the connection closes.', headers: authenticated() },
  409: {
    name: 'Conflict',
    description: 'Something changed meanwhile, or the state does not allow it; nothing was written.',
    headers: authenticated(),
  },
  413: { name: 'PayloadTooLarge', description: 'The body is over 1 MiB; the connection closes.', headers: authenticated() },
  415: { name: 'UnsupportedMediaType', description: 'The body is not uncompressed JSON.', headers: authenticated() },
  422: { name: 'ValidationFailed', description: 'Values the route cannot take: `details` names each field.', headers: authenticated() },
  429: { name: 'RateLimited', description: 'A budget is spent: nothing ran.', headers: authenticated('Retry-After') },
  500: { name: 'Internal', description: 'A fault of the service, logged under the request id.', headers: authenticated() },
  503: {
    name: 'Unavailable',
    description: 'The database is away for the moment; nothing was changed.',
    headers: authenticated('Retry-After'),
  },
  507: { name: 'InsufficientStorage', description: 'A disk is full; nothing was changed.', headers: authenticated('Retry-After') },
};

/**
 * A method a path does not answer. No operation refers to it (the document lists only the methods
 * a path answers); it is here so that answer is described too.
 */
const METHOD_NOT_ALLOWED = {
  description: 'The path does not answer this method (error.code: method_not_allowed); `Allow` lists those it does.',
  headers: authenticated('Allow'),
  content: ERROR_CONTENT,
};

/** The shared responses: the errors (a HEAD's without their body) with every code each status carries (`codes`), 204 and 304. */
export function sharedResponses(codes: Map<number, string[]>): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    NoContent: { description: 'Done; no body.', headers: authenticated() },
    NotModified: {
      description: 'Not Modified: the answer is still the one If-None-Match named; no body.',
      headers: authenticated('ETag'),
    },
    MethodNotAllowed: METHOD_NOT_ALLOWED,
  };
  for (const [status, { name, description, headers: carried }] of Object.entries(ERRORS)) {
    const described = `${description} error.code: ${(codes.get(Number(status)) ?? []).join(', ')}`;
    responses[name] = { description: described, headers: carried, content: ERROR_CONTENT };
    responses[`${name}Head`] = { description: `${described} (HEAD: the headers alone)`, headers: carried };
  }
  return responses;
}

/**
 * An error response of an operation: the shared one for its status; `codes`, when the route answers
 * fewer codes than the status carries, replace the description's list (a reference's own description
 * overrides its target's in OpenAPI 3.1).
 */
export function errorResponse(status: number, codes: string[] | null, head: boolean): Record<string, unknown> {
  const error = ERRORS[status];
  if (!error) throw new Error(`no shared response for status ${status}: add it to ERRORS`);
  const reference = ref('responses', head ? `${error.name}Head` : error.name);
  return codes ? { ...reference, description: `${error.description} error.code: ${codes.join(', ')}` } : reference;
}

export const NO_CONTENT = ref('responses', 'NoContent');
export const NOT_MODIFIED = ref('responses', 'NotModified');
