import type { EntityManager } from '@mikro-orm/postgresql';
import { ASSIGNEES } from './assignees/assignee.reads.js';
import { noneYet } from './by-conversation.js';
import { LABELS } from './labels/label.reads.js';

/**
 * Called by the request that has just opened issue or pull request `number`: it has no labels or
 * assignees yet (nothing sets them at creation), so the answer's `labels` and `assignees` cost no
 * statement. Holds for the mutation field that opened it: the next one starts with loads afresh.
 */
export function openedNow(scope: object, em: EntityManager, repositoryId: string, number: number): void {
  noneYet(scope, [LABELS, ASSIGNEES], em, repositoryId, number);
}
