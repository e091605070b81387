import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ROOT } from './server.js';

/**
 * Checks REST responses against the committed OpenAPI document (schema/openapi.json), so the
 * document cannot drift from the service: `Client.request` runs every answer through here.
 */

interface Response {
  $ref?: string;
  content?: Record<string, { schema: unknown }>;
}
interface Operation {
  responses: Record<string, Response>;
}
interface OpenApi {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, Response> };
}

/** Not the REST facade: GraphQL, the operations endpoints, the document itself and git. */
const NOT_REST = /^\/(graphql|healthz|readyz|metrics|openapi\.json)(\/|$)|\.git(\/|$)/;

const DOCUMENT = 'openapi.json';

let compiled: { ajv: Ajv2020; templates: Array<{ path: string; pattern: RegExp }>; document: OpenApi; prefixes: RegExp } | undefined;
const validators = new Map<string, ValidateFunction>();

/** Compiled once per process: the document as one schema, each answer validated through a JSON pointer into it. */
function load() {
  if (compiled) return compiled;
  const document = JSON.parse(readFileSync(path.join(ROOT, 'schema', 'openapi.json'), 'utf8')) as OpenApi;
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
  // ajv-formats is CommonJS: its default export is the plugin, or holds it.
  const formats = addFormats as unknown as { default?: unknown };
  const plugin = (formats.default ?? formats) as (ajv: Ajv2020) => unknown;
  plugin(ajv);
  ajv.addSchema(document as object, DOCUMENT);
  // Express matches paths case-insensitively and with a trailing slash.
  const templates = Object.keys(document.paths).map((p) => ({
    path: p,
    pattern: new RegExp(`^${escape(p).replace(/\{\w+\}/g, '[^/]+')}/?$`, 'i'),
  }));
  // Every path is served under each server (`/`, `/api`): a request's path less the server's.
  const bases = document.servers.map(({ url }) => url.replace(/\/$/, '')).filter(Boolean);
  const prefixes = new RegExp(`^(${bases.map(escape).join('|')})(?=/)`, 'i');
  compiled = { ajv, templates, document, prefixes };
  return compiled;
}

const escape = (text: string) => text.replace(/[.*+?^$()|[\]\\]/g, '\\$&');

/** A response of an operation, or the shared one it refers to (`#/components/responses/…`), and its JSON pointer. */
function resolveResponse(document: OpenApi, at: string[], response: Response): { response: Response; at: string[] } {
  const shared = response.$ref?.replace('#/components/responses/', '');
  if (shared === undefined) return { response, at };
  const target = document.components.responses[shared];
  if (!target) throw new Error(`OpenAPI: ${response.$ref} is not in the document`);
  return { response: target, at: ['components', 'responses', shared] };
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

function validator(ref: string): ValidateFunction {
  let validate = validators.get(ref);
  if (!validate) {
    validate = load().ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

/** Why the answer does not match, or null when it does. */
function problem(ref: string | null, status: number, text: string, body: unknown): string | null {
  if (ref === null) return text === '' ? null : `a ${status} has no body, got ${text.slice(0, 200)}`;
  if (body === undefined) return `a ${status} answers JSON, got ${JSON.stringify(text.slice(0, 200))}`;
  const validate = validator(ref);
  if (validate(body)) return null;
  const [first] = validate.errors ?? [];
  return `${first?.instancePath || '/'} ${first?.message ?? 'is invalid'} (${JSON.stringify(first?.params)})`;
}

const ERROR_REF = `${DOCUMENT}#/components/schemas/Error`;

/**
 * Throws when a REST answer does not match the document: the route's answer for that status, or —
 * for a path or method the document does not list — the error body.
 */
export function checkAgainstOpenApi(method: string, url: string, status: number, text: string, body: unknown): void {
  const { templates, document, prefixes } = load();
  const pathname = new URL(url, 'http://x').pathname.replace(prefixes, '');
  if (NOT_REST.test(pathname) || method === 'HEAD') return;
  const candidates = templates
    .filter(({ pattern }) => pattern.test(pathname))
    .map((t) => ({ path: t.path, operation: document.paths[t.path]![method.toLowerCase()] }))
    .filter((c): c is { path: string; operation: Operation } => c.operation !== undefined);
  if (!candidates.length) {
    const why = problem(ERROR_REF, status, text, body);
    if (why) throw new Error(`OpenAPI: ${method} ${pathname} (not a documented operation) answered ${status}: not the error body: ${why}`);
    return;
  }
  // Paths can overlap (/repos/{owner}/{repo}/resolve, /repos/{id}/issues/{number}): one must match.
  const problems: string[] = [];
  for (const { path: template, operation } of candidates) {
    const listed = operation.responses[String(status)];
    if (!listed) {
      problems.push(`${method} ${template}: status ${status} is not documented (${Object.keys(operation.responses).join(', ')})`);
      continue;
    }
    const { response, at } = resolveResponse(document, ['paths', template, method.toLowerCase(), 'responses', String(status)], listed);
    const ref = response.content ? `${DOCUMENT}#/${pointer(...at, 'content', 'application/json', 'schema')}` : null;
    const why = problem(ref, status, text, body);
    if (!why) return;
    problems.push(`${method} ${template} ${status}: ${why}`);
  }
  throw new Error(`OpenAPI: the answer does not match the document: ${problems.join('; ')}`);
}
