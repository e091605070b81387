import { LRUCache } from 'lru-cache';
import type { Rendered } from './conditional.js';

/** At most this many bytes of answers are kept per process; the least recently sent go first. */
const MOST_BYTES = 16 * 1024 * 1024;
/** A larger answer is made anew each time: one must not push out hundreds of others. */
const MOST_BYTES_EACH = 1024 * 1024;

/**
 * Rendered answers of the routes that declare a version operation (route.ts, `reuse`), kept by
 * the version they were made at. Making an answer is most of a request's work when it lists many
 * records (the combined status of fifty contexts: every field of every status executed, converted
 * and serialised); reading the version is one small read. The version is read at every request —
 * from the database, so a change made through any process is seen — and an answer is sent again
 * only for the version it was made at: nothing here goes stale, and nothing needs telling of a
 * change. Answers of versions no longer current are simply never asked for again, and make room.
 *
 * The version is read BEFORE the answer is made. Versions never come back, so if anything changed
 * between the two reads, the version the answer is kept by is already outdated and the answer is
 * never sent; an answer kept by a current version was made from that very state.
 */
export class KeptAnswers {
  private readonly kept = new LRUCache<string, Rendered>({
    maxSize: MOST_BYTES,
    maxEntrySize: MOST_BYTES_EACH,
    sizeCalculation: (rendered, key) => Buffer.byteLength(rendered.body) + rendered.tag.length + key.length,
  });

  /** The answer made at `version` of `route`'s, if it is kept. */
  get(route: string, version: string): Rendered | undefined {
    return this.kept.get(`${route} ${version}`);
  }

  set(route: string, version: string, rendered: Rendered): void {
    this.kept.set(`${route} ${version}`, rendered);
  }
}
