/** The CLI's list commands: users, tokens, a webhook's recent deliveries. Each prints a table, or the GraphQL records with --json. */
import { fail, graphql, type Connection } from './api.js';
import { table, time, type Column } from './table.js';

export interface ListOptions extends Connection {
  json?: boolean | undefined;
  limit?: string | undefined;
  offset?: string | undefined;
}

interface Page<T> {
  nodes: T[];
  totalCount: number;
  offset: number;
  hasMore: boolean;
}

function count(flag: 'limit' | 'offset', value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) fail(`--${flag} must be a non-negative integer`);
  return Number(value);
}

function paging(options: ListOptions) {
  return { limit: count('limit', options.limit), offset: count('offset', options.offset) };
}

function print<T>(options: ListOptions, page: Page<T>, columns: readonly Column<T>[]): void {
  if (options.json) {
    console.log(JSON.stringify(page.nodes, null, 2));
    return;
  }
  console.log(table(page.nodes, columns));
  // A hint, not data: on stderr, so the table can be piped as it is.
  if (page.hasMore) console.error(`${page.totalCount - page.offset - page.nodes.length} more: --offset ${page.offset + page.nodes.length}`);
}

interface UserRecord {
  id: string;
  login: string;
  email: string;
  admin: boolean;
  createdAt: string;
}

export async function listUsers(options: ListOptions): Promise<void> {
  const { users } = await graphql<{ users: Page<UserRecord> }>(
    options,
    'query($limit: Int, $offset: Int) { users(limit: $limit, offset: $offset) { totalCount offset hasMore nodes { id login email admin createdAt } } }',
    paging(options),
  );
  print(options, users, [
    ['ID', (u) => u.id],
    ['LOGIN', (u) => u.login],
    ['EMAIL', (u) => u.email],
    ['ADMIN', (u) => (u.admin ? 'yes' : 'no')],
    ['CREATED', (u) => time(u.createdAt)],
  ]);
}

interface TokenRecord {
  id: string;
  name: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
}

/** A user's tokens (`--login`; the caller's own by default). Never a secret: GraphQL has none to give. */
export async function listTokens(options: ListOptions & { login?: string | undefined }): Promise<void> {
  const { userAccessTokens } = await graphql<{ userAccessTokens: Page<TokenRecord> }>(
    options,
    `
      query ($login: String, $limit: Int, $offset: Int) {
        userAccessTokens(login: $login, limit: $limit, offset: $offset) {
          totalCount
          offset
          hasMore
          nodes {
            id
            name
            scopes
            createdAt
            lastUsedAt
            expiresAt
            revokedAt
          }
        }
      }
    `,
    { login: options.login, ...paging(options) },
  );
  print(options, userAccessTokens, [
    ['ID', (t) => t.id],
    ['NAME', (t) => t.name],
    ['SCOPES', (t) => t.scopes.join(',')],
    ['CREATED', (t) => time(t.createdAt)],
    ['LAST USED', (t) => time(t.lastUsedAt)],
    ['EXPIRES', (t) => time(t.expiresAt)],
    ['REVOKED', (t) => time(t.revokedAt)],
  ]);
}

interface DeliveryRecord {
  id: string;
  event: string;
  action: string | null;
  status: string;
  statusCode: number | null;
  durationMs: number | null;
  createdAt: string;
}

const DELIVERIES = `webhook(id: $hook) {
  deliveries(limit: $limit, offset: $offset) {
    totalCount offset hasMore nodes { id event action status statusCode durationMs createdAt }
  }
}`;

/**
 * A webhook's recent deliveries, newest first, like GitHub's "Recent
 * deliveries". `repo` is `owner/name` (looked up by name, as the REST facade
 * resolves it) or a repository id.
 */
export async function listDeliveries(options: ListOptions, repo: string, hook: string): Promise<void> {
  const byName = repo.split('/');
  if (byName.length > 2 || byName.some((part) => part === '')) fail('<repo> must be owner/name or a repository id');
  type Found = { webhook: { deliveries: Page<DeliveryRecord> } | null } | null;
  const variables = { hook, ...paging(options) };
  const vars = '$hook: ID!, $limit: Int, $offset: Int';
  const found =
    byName.length === 2
      ? (
          await graphql<{ repositoryByName: Found }>(
            options,
            `query($owner: String!, $name: String!, ${vars}) { repositoryByName(owner: $owner, name: $name) { ${DELIVERIES} } }`,
            { owner: byName[0], name: byName[1], ...variables },
          )
        ).repositoryByName
      : (
          await graphql<{ repository: Found }>(options, `query($id: ID!, ${vars}) { repository(id: $id) { ${DELIVERIES} } }`, {
            id: repo,
            ...variables,
          })
        ).repository;
  if (!found) fail(`error: repository ${repo} not found`);
  if (!found.webhook) fail(`error: webhook ${hook} not found in ${repo}`);
  print(options, found.webhook.deliveries, [
    ['ID', (d) => d.id],
    ['EVENT', (d) => d.event],
    ['ACTION', (d) => d.action],
    ['STATUS', (d) => d.status.toLowerCase()],
    ['CODE', (d) => d.statusCode],
    ['DURATION', (d) => (d.durationMs === null ? null : `${d.durationMs} ms`)],
    ['TIME', (d) => time(d.createdAt)],
  ]);
}
