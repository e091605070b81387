#!/usr/bin/env node
/**
 * `npx cairn …`: manage users and tokens of a running Cairn through its
 * GraphQL API. The admin token comes from --token, CAIRN_TOKEN, or the
 * data directory's admin-token file; the address from --url, CAIRN_BASE_URL
 * or http://localhost:$PORT. A created token is printed on the last line of
 * stdout, so scripts can take it with `tail -n 1`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const USAGE = `usage:
  cairn user create <login> --email <email> [--admin]
  cairn token create --name <name> --scopes <scope,scope> [--login <login>] [--expires-at <ISO date>]
  cairn token revoke <token-id>
options: --url <base url>  --token <admin token>  --data-dir <dir>`;

const OPTIONS = {
  email: { type: 'string' },
  admin: { type: 'boolean', default: false },
  name: { type: 'string' },
  scopes: { type: 'string' },
  login: { type: 'string' },
  'expires-at': { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  'data-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseCommandLine() {
  try {
    return parseArgs({ allowPositionals: true, options: OPTIONS });
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`);
  }
}

const { values, positionals } = parseCommandLine();

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

function adminToken(): string {
  if (values.token) return values.token;
  if (process.env.CAIRN_TOKEN) return process.env.CAIRN_TOKEN;
  const file = path.join(path.resolve(values['data-dir'] ?? process.env.CAIRN_DATA_DIR ?? './data'), 'admin-token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return fail(`no token: pass --token, set CAIRN_TOKEN, or run where ${file} exists`);
  }
}

async function graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const base = (values.url ?? process.env.CAIRN_BASE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(/\/+$/, '');
  let response: Response;
  try {
    response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken()}` },
      body: JSON.stringify({ query, variables }),
    });
  } catch {
    return fail(`cannot reach Cairn at ${base}: is it running?`);
  }
  const body = (await response.json().catch(() => ({}))) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length || !body.data) fail(`error: ${body.errors?.map((e) => e.message).join('; ') ?? `HTTP ${response.status}`}`);
  return body.data;
}

const [noun, verb, argument] = positionals;
if (values.help || !noun) {
  console.log(USAGE);
} else if (noun === 'user' && verb === 'create') {
  if (!argument || !values.email) fail(USAGE);
  const data = await graphql<{ createUser: { id: string; login: string } }>(
    'mutation($input: CreateUserInput!) { createUser(input: $input) { id login email admin } }',
    { input: { login: argument, email: values.email, admin: values.admin } },
  );
  console.log(`created user ${data.createUser.login} (${data.createUser.id})`);
} else if (noun === 'token' && verb === 'create') {
  if (!values.name || !values.scopes) fail(USAGE);
  const data = await graphql<{ createAccessToken: { token: string; accessToken: { id: string; scopes: string[] } } }>(
    'mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { token accessToken { id name scopes expiresAt } } }',
    {
      input: {
        login: values.login,
        name: values.name,
        scopes: values.scopes
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        expiresAt: values['expires-at'],
      },
    },
  );
  const { token, accessToken } = data.createAccessToken;
  console.log(`created token ${accessToken.id} with scopes ${accessToken.scopes.join(', ')} (shown once):`);
  console.log(token);
} else if (noun === 'token' && verb === 'revoke') {
  if (!argument) fail(USAGE);
  await graphql('mutation($id: ID!) { revokeAccessToken(id: $id) }', { id: argument });
  console.log(`revoked ${argument}`);
} else {
  fail(USAGE);
}
