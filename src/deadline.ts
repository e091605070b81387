/** What `within` saw: the work's value, or that the deadline came first. */
export type WithinDeadline<T> = { late: false; value: T } | { late: true };

/**
 * Waits for `work` at most `ms`. Past it the caller goes on (`late`) and the work is left to finish
 * on its own, its outcome unheard: for waits on something that may hang (a stalled database, a push
 * stuck at shutdown) that must not hold the caller. A rejection within the deadline is the caller's.
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<WithinDeadline<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<WithinDeadline<T>>((resolve) => (timer = setTimeout(() => resolve({ late: true }), ms)));
  work.catch(() => undefined); // a rejection after the deadline has nobody to tell
  try {
    return await Promise.race([work.then((value) => ({ late: false as const, value })), late]);
  } finally {
    clearTimeout(timer);
  }
}
