import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Serialises the changes to one issue's or pull request's labels or assignees until `tx` ends: a cap
 * (100 labels, 10 assignees) is decided on what the previous change committed, so two concurrent
 * additions cannot pass it together. Nothing else takes this lock.
 */
export async function lockConversation(tx: EntityManager, repositoryId: string, number: number): Promise<void> {
  await tx.execute('select pg_advisory_xact_lock(hashtext(?), ?)', [`conversation:${repositoryId}`, number]);
}
