// The order jest starts test files in: the slowest first, so the run does not end with one long file
// on one worker while the others have nothing left (plain JS: jest loads it before any transform).
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Sequencer from '@jest/test-sequencer';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Seconds each slow file took in a full run on a 2-core machine (files under 5 s are left out). Jest
 * orders by the durations it cached from earlier runs on this machine; a fresh clone (CI) has none,
 * and jest would fall back to file size, which starts a 120 s file of one test last. Only the order
 * depends on these figures: a stale one costs some minutes of wall time, never a result.
 */
const KNOWN = JSON.parse(readFileSync(path.join(ROOT, 'test/support/file-durations.json'), 'utf8'));

export default class SlowestFirst extends Sequencer.default {
  sort(tests) {
    const seconds = (test) => {
      const cached = this.time(test);
      return cached !== undefined ? cached / 1000 : (KNOWN[path.relative(ROOT, test.path)] ?? 0);
    };
    // Failed files first, as jest does, for the quickest news; then the slowest first.
    return [...tests].sort((a, b) => Number(this.hasFailed(b)) - Number(this.hasFailed(a)) || seconds(b) - seconds(a));
  }
}
