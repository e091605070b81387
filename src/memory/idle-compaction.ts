import { setFlagsFromString, getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../logger.js';
import { asOwnPause, watchEventLoopLoad } from './event-loop-load.js';

/** How often the event loop's recent load is looked at. */
const CHECK_EVERY_MS = 1_000;
/** Below this share of the last interval spent working, the process counts as quiet. */
const QUIET_UTILIZATION = 0.02;
/** Quiet intervals in a row before memory is given back. */
const QUIET_CHECKS = 2;
/** Heap V8 has to have grown by since the last compaction to make another worth its pause. */
const WORTH_BYTES = 8 * 1024 * 1024;

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives memory back to the system once the service goes quiet: after start-up, and after each burst
 * of load that grew the heap. V8 keeps the pages it has grown into — a young generation at its cap,
 * old-generation pages half full of start-up garbage — for as long as the process lives; its ordinary
 * collections free objects but not pages. A memory-reducing collection (the one V8 runs before it
 * declares the heap out of memory) compacts the heap and releases them: about 20 MB of ~120 MB after
 * start-up, for a pause of about 100 ms, taken only once the event loop has been nearly idle (under
 * 2% busy) for two seconds, and not again until the heap has grown by WORTH_BYTES.
 *
 * `gc` is reached the way jest's leak detector reaches it: `--expose-gc` set at run time and the
 * function taken from a fresh context, so the service's own global has no `gc` for code to call.
 */
export function compactWhenIdle(log: Logger): { stop: () => void } {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as Gc;
  let quiet = 0;
  let compactedAt = 0; // committed heap right after the last compaction; 0: start-up's garbage is still there
  // The largest committed heap seen since then: by the time the process is quiet, V8 may have shrunk
  // the heap itself while the pages it grew into stay resident.
  let peak = 0;

  return watchEventLoopLoad(CHECK_EVERY_MS, (utilization) => {
    peak = Math.max(peak, getHeapStatistics().total_heap_size);
    quiet = utilization < QUIET_UTILIZATION ? quiet + 1 : 0;
    if (quiet < QUIET_CHECKS) return;
    if (compactedAt && peak < compactedAt + WORTH_BYTES) return;
    const rssBefore = process.memoryUsage.rss();
    const started = performance.now();
    asOwnPause(() => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }));
    compactedAt = peak = getHeapStatistics().total_heap_size;
    log.info(
      { ms: Math.round(performance.now() - started), rssBeforeMb: mb(rssBefore), rssAfterMb: mb(process.memoryUsage.rss()) },
      'memory given back while idle',
    );
  });
}

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}
