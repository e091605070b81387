/** The CLI's list commands: users, tokens, a webhook's recent deliveries, a repository's branch rules. Each prints a table, or the GraphQL records with --json. */
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
 * `selection` of a repository named by `repo`: `owner/name` (looked up by name, as the REST facade
 * resolves it) or a repository id; fails when there is no such repository.
 */
async function inRepository<T>(options: ListOptions, repo: string, selection: string, vars: string, variables: object): Promise<T> {
  const byName = repo.split('/');
  if (byName.length > 2 || byName.some((part) => part === '')) fail('<repo> must be owner/name or a repository id');
  const more = vars ? `, ${vars}` : '';
  const found =
    byName.length === 2
      ? (
          await graphql<{ repositoryByName: T | null }>(
            options,
            `query($owner: String!, $name: String!${more}) { repositoryByName(owner: $owner, name: $name) { ${selection} } }`,
            { owner: byName[0], name: byName[1], ...variables },
          )
        ).repositoryByName
      : (
          await graphql<{ repository: T | null }>(options, `query($id: ID!${more}) { repository(id: $id) { ${selection} } }`, {
            id: repo,
            ...variables,
          })
        ).repository;
  if (!found) fail(`error: repository ${repo} not found`);
  return found;
}

/** A webhook's recent deliveries, newest first, like GitHub's "Recent deliveries". */
export async function listDeliveries(options: ListOptions, repo: string, hook: string): Promise<void> {
  type Found = { webhook: { deliveries: Page<DeliveryRecord> } | null };
  const found = await inRepository<Found>(options, repo, DELIVERIES, '$hook: ID!, $limit: Int, $offset: Int', { hook, ...paging(options) });
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

interface ProtectionRecord {
  pattern: string;
  requiredPullRequest: boolean;
  requiredApprovingReviewCount: number;
  requiredStatusChecks: { strict: boolean; contexts: string[] } | null;
  enforceAdmins: boolean;
  allowForcePushes: boolean;
  allowDeletions: boolean;
  requiredLinearHistory: boolean;
}

/** A repository's branch rules, by pattern (admin). */
export async function listProtections(options: ListOptions, repo: string): Promise<void> {
  const selection = `branchProtections { pattern requiredPullRequest requiredApprovingReviewCount requiredStatusChecks { strict contexts }
    enforceAdmins allowForcePushes allowDeletions requiredLinearHistory }`;
  const { branchProtections: rules } = await inRepository<{ branchProtections: ProtectionRecord[] }>(options, repo, selection, '', {});
  const yes = (value: boolean) => (value ? 'yes' : 'no');
  print(options, { nodes: rules, totalCount: rules.length, offset: 0, hasMore: false }, [
    ['BRANCH', (r) => r.pattern],
    ['PULL REQUEST', (r) => yes(r.requiredPullRequest)],
    ['APPROVALS', (r) => r.requiredApprovingReviewCount],
    [
      'STATUS CHECKS',
      (r) =>
        r.requiredStatusChecks ? `${r.requiredStatusChecks.contexts.join(',')}${r.requiredStatusChecks.strict ? ' (strict)' : ''}` : null,
    ],
    ['ADMINS', (r) => (r.enforceAdmins ? 'bound' : 'bypass')],
    ['FORCE-PUSH', (r) => yes(r.allowForcePushes)],
    ['DELETE', (r) => yes(r.allowDeletions)],
    ['LINEAR', (r) => yes(r.requiredLinearHistory)],
  ]);
}
