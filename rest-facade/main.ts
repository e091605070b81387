import { runService } from '../src/run.js';

/**
 * `npm start`: Cairn as it runs — the core (src/: GraphQL, git over HTTP,
 * webhooks) with the REST facade mounted onto it at `/api` and `/`. The
 * facade depends on the core, never the other way round, so the process
 * entry lives here, on the outside.
 */
await runService(async () => (await import('./index.js')).restSurface);
