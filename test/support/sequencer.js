// The order jest starts test files in: the slowest first, so the run does not end with one long file
// on one worker while the others have nothing left (plain JS: jest loads it before any transform).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Sequencer from '@jest/test-sequencer';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Seconds each file took in a full run on a 2-core machine. Jest orders by the durations it cached
 * from earlier runs on this machine; a fresh clone (CI) has none, and jest would fall back to file
 * size, which starts a two-minute file of one test last. A file missing here (a new one) runs first,
 * as jest runs a file it has no time for. Only the order depends on these figures: a stale one costs
 * some wall time, never a result.
 */
const KNOWN = JSON.parse(readFileSync(path.join(ROOT, 'test/support/file-durations.json'), 'utf8'));

export default class SlowestFirst extends Sequencer.default {
  /** A file's last duration in ms: jest's record of this machine's runs, else the committed one. Jest's own sort does the rest. */
  time(test) {
    const known = KNOWN[path.relative(ROOT, test.path)];
    return super.time(test) ?? (known === undefined ? undefined : known * 1000);
  }
}
