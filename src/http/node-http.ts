import { createRequire } from 'node:module';
import type * as NodeHttp from 'node:http';

/**
 * `node:http`, loaded as CommonJS. An ES `import` of it copies every export into the module's
 * namespace, and `WebSocket`, `MessageEvent` and `CloseEvent` among them are getters that load
 * Node's bundled undici (the fetch and WebSocket client): 1 MB of source, about 0.1 s of CPU and
 * 7 MB of memory in every process, for clients the service never uses. A `require` reads the
 * exports only when used. Types are imported from `node:http` as usual (`import type`).
 */
export const http = createRequire(import.meta.url)('node:http') as typeof NodeHttp;
