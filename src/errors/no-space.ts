import { DomainError } from './domain-error.js';

/** What a client is told to wait before trying a write again while the disk is full. */
const RETRY_AFTER_SECONDS = 10;

/** Where the space ran out: the database's disk, or the service's own (repositories, spooled bodies). */
export type FullStore = 'database' | 'files';

export const insufficientStorage = (store: FullStore) =>
  new DomainError(
    'INSUFFICIENT_STORAGE',
    store === 'database'
      ? "the database's disk is full (no space left on device): nothing was changed; try again once space is freed"
      : "the server's disk is full (no space left on device): nothing was changed; try again once space is freed",
    [],
    RETRY_AFTER_SECONDS,
  );

/** PostgreSQL's SQLSTATE for a write that found no space (class 53, insufficient resources: disk_full). */
const DISK_FULL_STATE = '53100';
/** errno codes of a write that found no space: the disk, or the writer's quota. */
const NO_SPACE_CODES = new Set(['ENOSPC', 'EDQUOT']);
/**
 * How a command says it on its stderr (git: `fatal: …: No space left on device`): read from a
 * failed command's stderr alone, at the end of a line, never from a message that may quote a
 * client's input.
 */
const NO_SPACE_STDERR = /: (No space left on device|Disk quota exceeded)$/m;

let onRefusal: ((store: FullStore, error: unknown) => void) | null = null;

/** Who hears of each write refused for lack of space (the disk's health: readiness, metrics, the log); set once at start-up. */
export function reportNoSpaceTo(listener: (store: FullStore, error: unknown) => void): void {
  onRefusal = listener;
}

/** Where the space ran out, if `error` (or one of its causes) says a disk is full; null otherwise. */
function fullStoreOf(error: unknown): { store: FullStore; cause: unknown } | null {
  for (let cause = error, depth = 0; cause && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const e = cause as { code?: unknown; stderr?: unknown };
    if (e.code === DISK_FULL_STATE) return { store: 'database', cause };
    if ((typeof e.code === 'string' && NO_SPACE_CODES.has(e.code)) || (typeof e.stderr === 'string' && NO_SPACE_STDERR.test(e.stderr))) {
      return { store: 'files', cause };
    }
  }
  return null;
}

/** Whether an error is a write that found a disk full: a passing condition, never the data's fault. */
export const isNoSpace = (error: unknown): boolean => fullStoreOf(error) !== null;

/**
 * A write that failed because a disk is full — PostgreSQL's disk_full, an ENOSPC from the file
 * system, or git saying so — is the site's condition, not the request's fault nor a bug: 507
 * `insufficient_storage`, naming the cause, instead of a 500. Null for every other error.
 */
export function noSpaceOf(error: unknown): DomainError | null {
  const full = fullStoreOf(error);
  if (!full) return null;
  onRefusal?.(full.store, full.cause);
  return insufficientStorage(full.store);
}
