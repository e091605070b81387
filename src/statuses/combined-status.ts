import { hash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';
import { asDate, fastRead } from '../db/fast-read.js';

/**
 * The combined status of commits: the latest status of each context, and the one state they add
 * up to. Read from `commit_status_contexts`, which holds one row per (repository, sha, context)
 * naming its latest status, so neither function scans the history of a sha.
 */

export type CombinedState = 'pending' | 'success' | 'failure';
export type StatusState = 'pending' | 'success' | 'failure' | 'error';

/** The latest status of one context: the record the API shows for it. */
export interface LatestStatus {
  id: string;
  context: string;
  state: StatusState;
  description: string | null;
  targetUrl: string | null;
  creator: { id: string; login: string };
  createdAt: Date;
  updatedAt: Date;
}

export interface CombinedStatus {
  sha: string;
  state: CombinedState;
  statuses: LatestStatus[];
  totalCount: number;
}

/** `failure` if any context failed or errored, else `pending` if any is pending or there are none, else `success`. */
function combine(states: Iterable<StatusState>): CombinedState {
  let any = false;
  let pending = false;
  for (const state of states) {
    if (state === 'failure' || state === 'error') return 'failure';
    if (state === 'pending') pending = true;
    any = true;
  }
  return pending || !any ? 'pending' : 'success';
}

/** A status as read from `commit_statuses` joined with its creator's login. */
export interface StatusRow {
  id: string;
  context: string;
  state: StatusState;
  description: string | null;
  target_url: string | null;
  creator_id: string;
  creator_login: string;
  created_at: string | Date;
  updated_at: string | Date;
}

/** The record of a status row. */
export function statusOf(row: StatusRow): LatestStatus {
  return {
    id: row.id,
    context: row.context,
    state: row.state,
    description: row.description,
    targetUrl: row.target_url,
    creator: { id: row.creator_id, login: row.creator_login },
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
  };
}

/** Latest status per context of one sha, and their combined state. */
export async function combinedStatus(em: EntityManager, repositoryId: string, sha: string): Promise<CombinedStatus> {
  return combinedOf(sha, (await latestStatusesOf(em, repositoryId, [sha])).get(sha) ?? []);
}

/**
 * The version of the combined status of `sha`: a value that names one answer — the same whenever
 * the combined status would show the same, whatever ref named the sha — and changes whenever it
 * would show anything else, never to come back. It digests the repository, the sha, the ids of the
 * latest statuses (a new status is a new id) and the repository row's `row_version`, which every
 * update of the row replaces with a random value: a rename, the visibility, the default branch, and
 * every move of its refs, which writes their fingerprint there. Ref moves must change it although
 * the sha is in the digest: the version and the answer each resolve the ref, so a branch moved away
 * and back between the two would otherwise leave an answer of the other sha under a version that
 * comes back. Logins never change. `hasStatuses` as for `combined`.
 */
export async function combinedVersion(
  em: EntityManager,
  repositoryId: string,
  sha: string,
): Promise<{ version: string; hasStatuses: boolean }> {
  const [row] = await fastRead<{ row_version: string; latest: string | null }>(
    em,
    `select r.row_version,
            (select string_agg(c.latest_id, ',' order by c.latest_id) from commit_status_contexts c
              where c.repository_id = r.id and c.sha = ?) as latest
       from repositories r where r.id = ?`,
    [sha, repositoryId],
    true, // only read: two strings, hashed below
  );
  if (!row) throw notFound('repository');
  const digest = hash('sha1', `${repositoryId} ${sha} ${row.row_version} ${row.latest ?? ''}`, 'base64url');
  return { version: digest, hasStatuses: row.latest !== null };
}

/** The combined status of one sha from its latest statuses (newest first). */
export function combinedOf(sha: string, statuses: LatestStatus[]): CombinedStatus {
  return { sha, state: combine(statuses.map((status) => status.state)), statuses, totalCount: statuses.length };
}

/** The latest status per context of many shas with one query: sha → statuses, newest first. */
export async function latestStatusesOf(em: EntityManager, repositoryId: string, shas: string[]): Promise<Map<string, LatestStatus[]>> {
  const found = new Map<string, LatestStatus[]>();
  const unique = [...new Set(shas)].filter((sha) => /^[0-9a-f]{40}$/.test(sha));
  if (!unique.length) return found;
  // Hex shas joined by commas: one text parameter, whichever driver runs the statement.
  const rows = await fastRead<StatusRow & { sha: string }>(
    em,
    `select c.sha, s.id, s.context, s.state, s.description, s.target_url, s.creator_id, u.login as creator_login, s.created_at, s.updated_at
       from commit_status_contexts c
       join commit_statuses s on s.id = c.latest_id
       join users u on u.id = s.creator_id
      where c.repository_id = ? and c.sha = any(string_to_array(?, ','))
      order by s.created_at desc, s.id desc`,
    [repositoryId, unique.join(',')],
  );
  for (const row of rows) {
    const statuses = found.get(row.sha);
    if (statuses) statuses.push(statusOf(row));
    else found.set(row.sha, [statusOf(row)]);
  }
  return found;
}

/** Combined state of many shas at once (pull request lists): one query; a sha without statuses is `pending`. */
export async function combinedStates(em: EntityManager, repositoryId: string, shas: string[]): Promise<Map<string, CombinedState>> {
  const unique = [...new Set(shas)].filter((sha) => /^[0-9a-f]{40}$/.test(sha));
  const states = new Map<string, CombinedState>(shas.map((sha) => [sha, 'pending']));
  if (!unique.length) return states;
  // Hex shas joined by commas: one text parameter, whichever driver runs the statement.
  const rows = await fastRead<{ sha: string; states: StatusState[] | string }>(
    em,
    `select sha, array_agg(distinct state) as states from commit_status_contexts
      where repository_id = ? and sha = any(string_to_array(?, ',')) group by sha`,
    [repositoryId, unique.join(',')],
  );
  for (const row of rows) {
    const held = typeof row.states === 'string' ? (row.states.replace(/[{}]/g, '').split(',') as StatusState[]) : row.states;
    states.set(row.sha, combine(held));
  }
  return states;
}
