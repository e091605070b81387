/**
 * The CLI's list commands: users, tokens, a webhook's recent deliveries, a repository's branch rules.
 * Each prints a table, or with --json the records GraphQL gives, enum values in lower case as the
 * table shows them.
 */
import { fail, graphql, type Connection } from './api.js';
import type { RepositoryRef } from './options.js';
import { table, time, type Column } from './table.js';

interface ListOptions extends Connection {
  json?: boolean | undefined;
  limit?: number | undefined;
  offset?: number | undefined;
}

interface Page<T> {
  nodes: T[];
  totalCount: number;
  offset: number;
  hasMore: boolean;
}

function paging(options: ListOptions) {
  return { limit: options.limit, offset: options.offset };
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

/** `selection` of a repository, by name or by id; fails when there is no such repository. */
async function inRepository<T>(options: ListOptions, repo: RepositoryRef, selection: string, vars: string, variables: object): Promise<T> {
  const more = vars ? `, ${vars}` : '';
  const found =
    'id' in repo
      ? (
          await graphql<{ repository: T | null }>(options, `query($id: ID!${more}) { repository(id: $id) { ${selection} } }`, {
            id: repo.id,
            ...variables,
          })
        ).repository
      : (
          await graphql<{ repositoryByName: T | null }>(
            options,
            `query($owner: String!, $name: String!${more}) { repositoryByName(owner: $owner, name: $name) { ${selection} } }`,
            { owner: repo.owner, name: repo.name, ...variables },
          )
        ).repositoryByName;
  if (!found) fail(`error: repository ${repo.text} not found`);
  return found;
}

/** A webhook's recent deliveries, newest first, like GitHub's "Recent deliveries". */
export async function listDeliveries(options: ListOptions, repo: RepositoryRef, hook: string): Promise<void> {
  type Found = { webhook: { deliveries: Page<DeliveryRecord> } | null };
  const found = await inRepository<Found>(options, repo, DELIVERIES, '$hook: ID!, $limit: Int, $offset: Int', { hook, ...paging(options) });
  if (!found.webhook) fail(`error: webhook ${hook} not found in ${repo.text}`);
  const { deliveries } = found.webhook;
  // GraphQL's enum values are upper case; the CLI shows them as Cairn's REST API and webhooks spell them.
  const nodes = deliveries.nodes.map((delivery) => ({ ...delivery, status: delivery.status.toLowerCase() }));
  print(options, { ...deliveries, nodes }, [
    ['ID', (d) => d.id],
    ['EVENT', (d) => d.event],
    ['ACTION', (d) => d.action],
    ['STATUS', (d) => d.status],
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
export async function listProtections(options: ListOptions, repo: RepositoryRef): Promise<void> {
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
