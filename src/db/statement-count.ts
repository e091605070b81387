import { AsyncLocalStorage } from 'node:async_hooks';

/** The SQL statements sent so far for one unit of work (an HTTP request). */
export interface StatementTally {
  count: number;
}

const current = new AsyncLocalStorage<StatementTally>();

/**
 * Runs `work` with a tally of the SQL statements it sends (both drivers: the ORM's and the fast
 * reads), including those of everything it awaits; background work started elsewhere is not
 * counted. What the API answers per request (a `Server-Timing` entry) and logs: a nested list that
 * costs a statement per listed item shows up as a count that grows with the page.
 */
export function countingStatements<T>(tally: StatementTally, work: () => T): T {
  return current.run(tally, work);
}

/** Called by the drivers for every statement they send. */
export function noteStatement(): void {
  const tally = current.getStore();
  if (tally) tally.count++;
}
