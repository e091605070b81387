import { klona } from 'klona';

/**
 * Identical reads (the same text and parameters) asked for in one turn of the event loop, sent as
 * one statement. Each is handed to its driver when the loop next runs its immediates: after every
 * request the loop read from the network in that turn, so after every asker's request arrived.
 * The one answer therefore shows each asker every change committed before its request came. A read
 * asked for once it was handed over is a read of its own (the one handed over may already be on
 * its way, its snapshot older than the asker's request).
 *
 * The first asker takes the rows; the others copies, made before any asker's code runs, so none
 * sees another's changes to them — except askers that promise only to read them, who may share
 * them (`answerAll`). The cost: a read leaves one turn of the loop later than it
 * would alone (the driver batches its writes on a turn of its own).
 */
export class SameTurnReads {
  private readonly waiting = new Map<string, Array<Asker<object>>>();

  /**
   * The rows of `send()`, or of the identical read (same `key`) already asked for in this turn.
   * `onlyReads`: the asker promises to change neither the rows nor anything in them (it maps them
   * into objects of its own), so askers making that promise may all be given the same rows.
   */
  ask<T extends object>(key: string, send: () => Promise<T[]>, onlyReads = false): Promise<T[]> {
    return new Promise<T[]>((resolve, reject) => {
      const asker: Asker<T> = { resolve, reject, onlyReads };
      const waiting = this.waiting.get(key) as Array<Asker<T>> | undefined;
      if (waiting) {
        waiting.push(asker);
        return;
      }
      const askers = [asker];
      this.waiting.set(key, askers as Array<Asker<object>>);
      setImmediate(() => {
        this.waiting.delete(key);
        send().then(
          (rows) => answerAll(askers, rows),
          (error: unknown) => askers.forEach((each) => each.reject(error)),
        );
      });
    });
  }
}

interface Asker<T> {
  resolve(rows: T[]): void;
  reject(error: unknown): void;
  onlyReads: boolean;
}

/**
 * The rows themselves go to the first asker that may change them, and every other such asker gets a
 * copy of its own. The askers that only read share the rows when no asker may change them, or else
 * one copy among them (the rows' taker may change them before they look).
 */
function answerAll<T>(askers: Array<Asker<T>>, rows: T[]): void {
  let taken = false;
  for (const each of askers) {
    if (each.onlyReads) continue;
    answer(each, rows, taken);
    taken = true;
  }
  const readers = askers.filter((each) => each.onlyReads);
  if (readers.length === 0) return;
  let shared = rows;
  try {
    if (taken) shared = klona(rows);
  } catch (error) {
    for (const each of readers) each.reject(error);
    return;
  }
  for (const each of readers) each.resolve(shared);
}

/**
 * Gives an asker the rows or a copy; rows that cannot be copied (a cycle) fail that asker alone.
 * klona deep-copies rows as drivers give them (plain objects, arrays, Dates, Buffers), about twice
 * as fast as structuredClone, and keeps a `__proto__` key of parsed JSON a key of the copy, as
 * JSON.parse made it, rather than making it the copy's prototype (as a plain assignment would).
 */
function answer<T>(asker: Asker<T>, rows: T[], copy: boolean): void {
  try {
    asker.resolve(copy ? klona(rows) : rows);
  } catch (error) {
    asker.reject(error);
  }
}

/**
 * The key of a read, or null when it must go alone: parameters JSON cannot tell apart (NaN,
 * undefined and null all print `null`; a Date prints as its text) are never merged.
 */
export function readKey(sql: string, params: unknown[]): string | null {
  for (const param of params) {
    const kind = typeof param;
    if (!(param === null || kind === 'string' || kind === 'boolean' || (kind === 'number' && Number.isFinite(param)))) return null;
  }
  return `${sql}\u0000${JSON.stringify(params)}`;
}
