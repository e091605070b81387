import type { IncomingMessage, Server } from 'node:http';
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
 * settings as they are. Once on, nothing is left watching: no timer, no listener on the requests.
 */
export function optimizeOnceBusy(log: Logger, server: Server, isUse: (req: IncomingMessage) => boolean): { stop: () => void } {
  const filtered = NO_FUNCTION.filter((flag) => process.execArgv.includes(flag));
  if (filtered.length === 0) return { stop: () => undefined };
  let requests = 0;
  const served = (req: IncomingMessage) => {
    if (isUse(req) && ++requests >= REQUESTS_IN_USE) switchOn('requests');
  };
  const watch = watchEventLoopLoad(CHECK_EVERY_MS, (utilization) => {
    if (utilization > BUSY_UTILIZATION) switchOn('load');
  });
  const stop = () => {
    watch.stop();
    server.off('request', served);
  };
  const switchOn = (reason: 'load' | 'requests') => {
    stop();
    for (const flag of filtered) setFlagsFromString(flag.replace('=-*', '=*'));
    log.info({ reason }, 'optimizing compilers on');
  };
  server.on('request', served);
  return { stop };
}
