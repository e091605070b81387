/**
 * `npm start`: Cairn as it runs — the core (src/: GraphQL, git over HTTP,
 * webhooks) with the REST facade mounted onto it at `/api` and `/`. The
 * facade depends on the core, never the other way round, so the process
 * entry lives here, on the outside.
 *
 * No compile cache (`module.enableCompileCache()`): it took about 70 ms off a 0.8 s start, but
 * Node keeps every cache file it read in memory for the life of the process, about 8 MB of a
 * service that idles at about 100 MB (docs/development.md, memory).
 */
import { runService } from '../src/run.js';

// `npm start` tunes the C allocator for this process (docs/development.md, memory): mapping every
// block of 32 KB or more on its own suits a heap that grows and shrinks with load, not the git and
// PostgreSQL processes the service starts, which inherit its environment. glibc read the setting
// when this process started; the children get their allocator's defaults.
delete process.env.MALLOC_MMAP_THRESHOLD_;

// The facade (and with it the core's modules) loads only once the configuration is known to be good.
await runService(async () => (await import('./index.js')).restSurface);
