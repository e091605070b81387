import type { EntityManager } from '@mikro-orm/postgresql';
import { executeBound } from '../../db/bound-query.js';
import { runGit } from '../run-git.js';

import { ZERO_SHA } from '../../ids.js';

/** ref name → sha. */
export type RefMap = Map<string, string>;

/** Pull refs (src/pulls/pull-refs.ts) are the service's own, kept beside the repository's: never a ref change of it. */
const PULL_REFS = 'refs/pull/';

/**
 * The refs on disk, from `git for-each-ref` (loose and packed alike), pull refs left out. Git
 * forbids newlines and spaces in ref names, so a line is `<sha> <name>`.
 */
export async function readDiskRefs(dir: string): Promise<RefMap> {
  const { stdout } = await runGit(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: dir });
  const refs: RefMap = new Map();
  for (const line of stdout.split('\n')) {
    const space = line.indexOf(' ');
    if (space === 40 && !line.startsWith(PULL_REFS, 41)) refs.set(line.slice(41), line.slice(0, 40));
  }
  return refs;
}

/** The refs of a repository as its recorded events last left them (`git_refs`). */
export async function readRecordedRefs(em: EntityManager, repositoryId: string): Promise<RefMap> {
  const rows = await em.execute<{ name: string; sha: string }[]>('select name, sha from git_refs where repository_id = ?', [repositoryId]);
  return new Map(rows.map((row) => [row.name, row.sha]));
}

/**
 * Writes ref changes to `git_refs` (a zero sha deletes the row), in the
 * caller's transaction: the same one that records their events. One statement
 * per kind of change, whatever the number of refs (a mirror push may move thousands).
 */
export async function saveRecordedRefs(
  em: EntityManager,
  repositoryId: string,
  changes: Array<{ ref: string; sha: string }>,
): Promise<void> {
  const deleted = changes.filter((change) => change.sha === ZERO_SHA).map((change) => change.ref);
  const upserted = changes.filter((change) => change.sha !== ZERO_SHA);
  // Lists travel as one JSON parameter (the driver would splice a JS array into separate values).
  // The existing rows are locked in name order first, as everything that locks several of them does
  // (opening a pull request shares its branches' rows): no two transactions wait for each other.
  await executeBound(
    em,
    `select 1 from git_refs where repository_id = ? and name in (select jsonb_array_elements_text(?::jsonb)) order by name for update`,
    [repositoryId, JSON.stringify(changes.map((change) => change.ref))],
  );
  if (deleted.length) {
    await executeBound(em, 'delete from git_refs where repository_id = ? and name in (select jsonb_array_elements_text(?::jsonb))', [
      repositoryId,
      JSON.stringify(deleted),
    ]);
  }
  if (upserted.length) {
    await executeBound(
      em,
      `insert into git_refs (repository_id, name, sha)
       select ?, changed.ref, changed.sha from jsonb_to_recordset(?::jsonb) as changed(ref text, sha text)
       on conflict (repository_id, name) do update set sha = excluded.sha`,
      [repositoryId, JSON.stringify(upserted)],
    );
  }
}
