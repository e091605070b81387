import type { EntityManager } from '@mikro-orm/postgresql';
import { combinedStates, type CombinedState } from './combined-status.js';

/**
 * The combined states a request asks for, read together: GraphQL resolves a field of every item of a
 * list before any of them awaits, so the heads of a page of pull requests queue here in one tick
 * and are read with one `combinedStates` query per repository, not one per pull request.
 */
interface Pending {
  shas: Set<string>;
  answer: Promise<Map<string, CombinedState>>;
}

/** Per request (its entity manager), per repository: the batch still open. */
const open = new WeakMap<EntityManager, Map<string, Pending>>();

export function combinedStateOf(em: EntityManager, repositoryId: string, sha: string): Promise<CombinedState> {
  let batches = open.get(em);
  if (!batches) open.set(em, (batches = new Map()));
  let pending = batches.get(repositoryId);
  if (!pending) {
    const shas = new Set<string>();
    const answer = new Promise<Map<string, CombinedState>>((resolve, reject) => {
      // After the resolvers of this tick have all asked: then the batch closes and is read.
      setImmediate(() => {
        batches.delete(repositoryId);
        combinedStates(em, repositoryId, [...shas]).then(resolve, reject);
      });
    });
    pending = { shas, answer };
    batches.set(repositoryId, pending);
  }
  pending.shas.add(sha);
  return pending.answer.then((states) => states.get(sha) ?? 'pending');
}
