import { LRUCache } from 'lru-cache';

/** An answer as it is written out: the JSON text and its entity tag. */
export interface Rendered {
  body: string;
  tag: string;
}

/** At most this many bytes of answers are kept per process; the least recently sent go first. */
const MOST_BYTES = 16 * 1024 * 1024;
/** A larger answer is made anew each time: one must not push out hundreds of others. */
const MOST_BYTES_EACH = 1024 * 1024;

/**
 * Rendered answers of the routes that declare a version (route.ts, `reuse`), each kept with the
 * version it was made at. Making an answer is most of a request's work when it lists many records
 * (the combined status of fifty contexts: every field of every status executed, converted and
 * serialised); asking for the version is one small read. An answer is sent again only while its
 * version is the current one, which the route's version operation reads at every request — in
 * whichever process the change was made — so nothing here is ever stale, and nothing needs to be
 * told of a change.
 *
 * The version is read BEFORE the answer is made and kept with it. Versions never come back, so if
 * anything changed between the two reads the kept version is already outdated and the answer is
 * never sent again; a kept answer whose version is current was made from that very state.
 */
export class KeptAnswers {
  private readonly kept = new LRUCache<string, Rendered & { version: string }>({
    maxSize: MOST_BYTES,
    maxEntrySize: MOST_BYTES_EACH,
    sizeCalculation: (entry) => entry.body.length + entry.tag.length + entry.version.length,
  });

  /** The answer kept for `key`, if it was made at `version`. */
  get(key: string, version: string): Rendered | undefined {
    const entry = this.kept.get(key);
    return entry?.version === version ? entry : undefined;
  }

  set(key: string, version: string, rendered: Rendered): void {
    this.kept.set(key, { ...rendered, version });
  }
}
