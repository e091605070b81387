#!/usr/bin/env node
/**
 * `npx cairn …`: manage users and tokens of a running Cairn, and read its
 * webhook deliveries, through its GraphQL API. The admin token comes from
 * --token, CAIRN_TOKEN, or the data directory's admin-token file; the address
 * from --url, CAIRN_BASE_URL or http://localhost:$PORT. A created token is
 * printed on the last line of stdout, so scripts can take it with `tail -n 1`.
 *
 * `backup` and `restore` are an administrator's tools instead: they work on the
 * database and the repositories directly (src/backup/), configured as the
 * service is, and are loaded only when asked for, so the other commands stay fast.
 */
import { parseArgs } from 'node:util';
import { fail, graphql } from './cli/api.js';
import { listDeliveries, listProtections, listTokens, listUsers } from './cli/lists.js';
import { SCOPES } from './principal.js';

const USAGE = `usage:
  cairn user create <login> --email <email> [--admin]
  cairn user list [--json] [--limit <n>] [--offset <n>]
  cairn user commit-email <email> | --clear     (the token's own user: the email of the commits Cairn makes for them)
  cairn token create --name <name> --scopes <scope,scope> [--login <login>] [--expires-at <ISO date>]
  cairn token list [--login <login>] [--json] [--limit <n>] [--offset <n>]
  cairn token revoke <token-id>
  cairn webhook deliveries <owner/name | repository id> <webhook id> [--json] [--limit <n>] [--offset <n>]
  cairn protection list <owner/name | repository id> [--json]     (its branch rules)
  cairn backup <dir>      (the site's database and repositories, consistent, into a new or empty directory; while it runs or not)
  cairn restore <dir>     (a backup into an empty site: a data dir without a database, or DATABASE_URL's empty one)
options: --url <base url>  --token <admin token>  --data-dir <dir>
scopes: ${SCOPES.join(', ')} (repo:status: commit statuses only, for CI)
backup and restore read the service's settings (CAIRN_DATA_DIR or --data-dir, CAIRN_REPOSITORIES_DIR, DATABASE_URL)`;

const OPTIONS = {
  email: { type: 'string' },
  admin: { type: 'boolean', default: false },
  clear: { type: 'boolean', default: false },
  name: { type: 'string' },
  scopes: { type: 'string' },
  login: { type: 'string' },
  'expires-at': { type: 'string' },
  json: { type: 'boolean', default: false },
  limit: { type: 'string' },
  offset: { type: 'string' },
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

/** A missing argument names itself (`--email is required`), then the usage. */
function required<T>(value: T | undefined, name: string): T {
  if (value === undefined || value === '') fail(`${name} is required\n${USAGE}`);
  return value;
}

const [noun, verb, argument, second] = positionals;
const command = `${noun ?? ''} ${verb ?? ''}`;
if (values.help || !noun) {
  console.log(USAGE);
} else if (command === 'user create') {
  const login = required(argument, '<login>');
  const email = required(values.email, '--email');
  const data = await graphql<{ createUser: { id: string; login: string } }>(
    values,
    'mutation($input: CreateUserInput!) { createUser(input: $input) { id login email admin } }',
    { input: { login, email, admin: values.admin } },
  );
  console.log(`created user ${data.createUser.login} (${data.createUser.id})`);
} else if (command === 'user list') {
  await listUsers(values);
} else if (command === 'user commit-email') {
  if (values.clear === (argument !== undefined)) fail(`give either <email> or --clear\n${USAGE}`);
  const data = await graphql<{ updateViewer: { login: string; commitEmail: string | null; noreplyEmail: string } }>(
    values,
    'mutation($input: UpdateViewerInput!) { updateViewer(input: $input) { login commitEmail noreplyEmail } }',
    { input: { commitEmail: values.clear ? null : argument } },
  );
  const { login, commitEmail, noreplyEmail } = data.updateViewer;
  console.log(`commits Cairn makes for ${login} carry ${commitEmail ?? `${noreplyEmail} (no-reply)`}`);
} else if (command === 'token create') {
  const name = required(values.name, '--name');
  const scopes = required(values.scopes, '--scopes');
  const data = await graphql<{
    createAccessToken: { token: string; accessToken: { id: string; scopes: string[]; expiresAt: string | null } };
  }>(
    values,
    'mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { token accessToken { id name scopes expiresAt } } }',
    {
      input: {
        login: values.login,
        name,
        scopes: scopes
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        expiresAt: values['expires-at'],
      },
    },
  );
  const { token, accessToken } = data.createAccessToken;
  // The expiry the service set, which may be the calling token's own when --expires-at was not given.
  const expiry = accessToken.expiresAt ? `, expires ${accessToken.expiresAt}` : '';
  console.log(`created token ${accessToken.id} with scopes ${accessToken.scopes.join(', ')}${expiry} (shown once):`);
  console.log(token);
} else if (command === 'token list') {
  await listTokens(values);
} else if (command === 'token revoke') {
  const id = required(argument, '<token-id>');
  await graphql(values, 'mutation($id: ID!) { revokeAccessToken(id: $id) }', { id });
  console.log(`revoked ${id}`);
} else if (noun === 'backup' || noun === 'restore') {
  if (argument !== undefined) fail(`cairn ${noun} takes one directory\n${USAGE}`);
  const { runBackupCommand } = await import('./backup/command.js');
  await runBackupCommand(noun, required(verb, '<dir>'), { dataDir: values['data-dir'] });
} else if (command === 'webhook deliveries') {
  await listDeliveries(values, required(argument, '<repo>'), required(second, '<hook>'));
} else if (command === 'protection list') {
  await listProtections(values, required(argument, '<repo>'));
} else {
  fail(`unknown command: ${positionals.join(' ')}\n${USAGE}`);
}
