import { setFlagsFromString } from 'node:v8';
import type { Logger } from '../logger.js';
import { watchEventLoopLoad } from './event-loop-load.js';

/** How often the event loop's recent load is looked at: a burst of work is seen within this. */
const CHECK_EVERY_MS = 250;
/**
 * Above this share of the last interval spent working, the service has load. Quiet, it works under
 * 3% of the time (timers, readiness probes); its own memory-reducing collection is not counted.
 */
const BUSY_UTILIZATION = 0.5;
/** The filters `npm start` sets: each compiler compiles no function at all. */
const NO_FUNCTION = ['--maglev-filter=-*', '--turbo-filter=-*'];
/** Requests (not operations probes) after which the service is in use, however light the pace. */
const REQUESTS_IN_USE = 20;

export interface DeferredOptimization {
  /** A request that is not an operations probe was served. */
  served(): void;
  stop(): void;
}

/**
 * Lets V8's optimizing compilers (Maglev, then TurboFan) work once the service is in use. `npm start`
 * starts the service with both filtered to no function at all (`--maglev-filter=-*
 * --turbo-filter=-*`): start-up runs its code once (module bodies, decorators, the ORM's metadata
 * discovery, migrations), and optimizing its busiest loops bought nothing but the compilers' own
 * code, about 8 MB of the node binary, resident for the life of a service that may then sit idle.
 * The first quarter second with load (a burst of requests, a backlog of deliveries), or the 20th
 * request at any pace (pushes one by one), lets them compile every function again, for good: the
 * code that serves requests is optimized as it gets hot, in the background as always. Readiness and
 * liveness probes and metrics scrapes of an idle service do not count. (Filters, not `--no-maglev`:
 * Maglev switched on after start-up would compile on the main thread, V8 setting up its background
 * compilation only when it starts enabled.) Started without those filters, the service leaves V8's
 * settings as they are.
 */
export function optimizeOnceBusy(log: Logger): DeferredOptimization {
  const filtered = NO_FUNCTION.filter((flag) => process.execArgv.includes(flag));
  if (filtered.length === 0) return { served: () => undefined, stop: () => undefined };
  let on = false;
  let requests = 0;
  const switchOn = (reason: 'load' | 'requests') => {
    on = true;
    watch.stop();
    for (const flag of filtered) setFlagsFromString(flag.replace('=-*', '=*'));
    log.info({ reason }, 'optimizing compilers on');
  };
  const watch = watchEventLoopLoad(CHECK_EVERY_MS, (utilization) => {
    if (utilization > BUSY_UTILIZATION) switchOn('load');
  });
  return {
    served: () => {
      if (!on && ++requests >= REQUESTS_IN_USE) switchOn('requests');
    },
    stop: () => watch.stop(),
  };
}
