import { DomainError } from './domain-error.js';
import { noSpaceOf } from './no-space.js';
import { unavailableOf } from './unavailable.js';

/**
 * The DomainError a thrown error is answered with, when it is not a bug: a DomainError itself, the
 * unavailability a lost or stalled database connection stands for, or a full disk. Null means
 * INTERNAL (logged).
 */
export function knownError(error: unknown): DomainError | null {
  return error instanceof DomainError ? error : (noSpaceOf(error) ?? unavailableOf(error));
}
