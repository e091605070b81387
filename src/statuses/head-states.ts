import type { EntityManager } from '@mikro-orm/postgresql';
import { combinedStates, latestStatusesOf, type CombinedState, type LatestStatus } from './combined-status.js';

/**
 * What a request asks of many commits, read together: GraphQL resolves a field of every item of a
 * list before any of them awaits, so the commits of a page (pull request heads, branch tips) queue
 * here in one tick and are read with one query per repository, not one per item.
 */
function perTick<T>(read: (em: EntityManager, repositoryId: string, shas: string[]) => Promise<Map<string, T>>) {
  /** Per request (its entity manager), per repository: the batch still open. */
  const open = new WeakMap<EntityManager, Map<string, { shas: Set<string>; answer: Promise<Map<string, T>> }>>();
  return (em: EntityManager, repositoryId: string, sha: string): Promise<T | undefined> => {
    let batches = open.get(em);
    if (!batches) open.set(em, (batches = new Map()));
    let pending = batches.get(repositoryId);
    if (!pending) {
      const shas = new Set<string>();
      const answer = new Promise<Map<string, T>>((resolve, reject) => {
        // After the resolvers of this tick have all asked: then the batch closes and is read.
        setImmediate(() => {
          batches.delete(repositoryId);
          read(em, repositoryId, [...shas]).then(resolve, reject);
        });
      });
      pending = { shas, answer };
      batches.set(repositoryId, pending);
    }
    pending.shas.add(sha);
    return pending.answer.then((found) => found.get(sha));
  };
}

const combinedStateBatch = perTick(combinedStates);
const latestStatusesBatch = perTick(latestStatusesOf);

/** The combined state of a commit's statuses (`pending` without any), batched per tick. */
export async function combinedStateOf(em: EntityManager, repositoryId: string, sha: string): Promise<CombinedState> {
  return (await combinedStateBatch(em, repositoryId, sha)) ?? 'pending';
}

/** The latest status of each context of a commit, newest first, batched per tick. */
export async function latestStatusesOfCommit(em: EntityManager, repositoryId: string, sha: string): Promise<LatestStatus[]> {
  return (await latestStatusesBatch(em, repositoryId, sha)) ?? [];
}
