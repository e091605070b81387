import type { EventLoopUtilization } from 'node:perf_hooks';

interface Watcher {
  last: EventLoopUtilization;
}

const watchers = new Set<Watcher>();

/**
 * Calls `onInterval` every `everyMs` with the share of that interval the event loop spent working
 * (0–1): how busy the service is, as the memory policies see it. The timer does not keep the
 * process alive.
 */
export function watchEventLoopLoad(everyMs: number, onInterval: (utilization: number) => void): { stop: () => void } {
  const watcher: Watcher = { last: performance.eventLoopUtilization() };
  watchers.add(watcher);
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, watcher.last).utilization;
    watcher.last = now;
    onInterval(utilization);
  }, everyMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      watchers.delete(watcher);
    },
  };
}

/**
 * Runs `pause`, work the service does on its own while quiet (a memory-reducing collection), and
 * leaves the time it took out of every watcher's current interval: it is not load. (Restarting the
 * intervals instead would not do: a watcher whose turn came right after would see a few microseconds
 * of the busy timer phase, nearly 100% busy.)
 */
export function asOwnPause<T>(pause: () => T): T {
  const before = performance.eventLoopUtilization();
  const result = pause();
  const spent = performance.eventLoopUtilization(performance.eventLoopUtilization(), before).active;
  for (const watcher of watchers) watcher.last = { ...watcher.last, active: watcher.last.active + spent };
  return result;
}
