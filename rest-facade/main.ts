import module from 'node:module';

/**
 * `npm start`: Cairn as it runs — the core (src/: GraphQL, git over HTTP,
 * webhooks) with the REST facade mounted onto it at `/api` and `/`. The
 * facade depends on the core, never the other way round, so the process
 * entry lives here, on the outside.
 *
 * Loading and compiling the service's modules is most of what starting costs. V8's compiled code
 * is kept on disk (Node's compile cache: NODE_COMPILE_CACHE, else a directory under the system's
 * temporary directory, keyed by each file's content), so every start after the first skips
 * compiling. It must be on before the first import of the service: hence the dynamic imports. The
 * cache is written once the service has started, so a process killed later has still left it.
 */
module.enableCompileCache?.(); // absent before Node 22.1: a start without it compiles as before
const { runService } = await import('../src/run.js');
await runService(async () => (await import('./index.js')).restSurface);
module.flushCompileCache?.();
