import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors/domain-error.js';

/**
 * Next number of the sequence that issues and pull requests share.
 * Must run inside the transaction that inserts the numbered record: the
 * UPDATE takes the repository row's lock until commit, so concurrent
 * creators queue up (no duplicates) and a rolled-back insert gives its
 * number back (no gaps).
 */
export async function allocateNumber(em: EntityManager, repositoryId: string): Promise<number> {
  const rows = await em.execute<{ last_number: number }[]>(
    'update repositories set last_number = last_number + 1 where id = ? returning last_number',
    [repositoryId],
  );
  if (!rows[0]) throw notFound('repository'); // deleted while this request ran
  return rows[0].last_number;
}
