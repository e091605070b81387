import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './server.js';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The exact body bytes. */
  raw: Buffer;
  body: any;
  at: number;
}

/** How the receiver answers a path: a status (200 by default), after an optional delay. */
export interface Behaviour {
  status?: number;
  delayMs?: number;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * A webhook receiver on loopback, as a CI system or bot would run: it
 * records every request and answers per path (`/ok`, `/fail`, `/hang`, …).
 */
export class Receiver {
  readonly received: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly server: http.Server;
  /** Requests taken and not answered (or abandoned) yet, by path. */
  private readonly open = new Map<string, number>();

  private constructor() {
    this.server = http.createServer((req, res) => {
      const opened = (req.url ?? '/').split('?')[0]!;
      this.open.set(opened, (this.open.get(opened) ?? 0) + 1);
      res.once('close', () => this.open.set(opened, this.open.get(opened)! - 1));
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', async () => {
        const raw = Buffer.concat(chunks);
        let body: unknown;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = undefined;
        }
        const path = (req.url ?? '/').split('?')[0]!;
        this.received.push({ path, headers: req.headers, raw, body, at: Date.now() });
        const behaviour = this.behaviours.get(path) ?? {};
        // Unref'd: a request still held when the test ends must not keep its worker alive.
        if (behaviour.delayMs) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs).unref());
        if (res.destroyed) return;
        res.writeHead(behaviour.status ?? 200, behaviour.headers ?? { 'content-type': 'text/plain' });
        res.end(behaviour.body ?? 'thanks');
      });
    });
    this.server.keepAliveTimeout = 30_000;
  }

  /** How many requests to `path` the receiver has taken and not answered yet (its delay still running). */
  unanswered(path: string): number {
    return this.open.get(path) ?? 0;
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string, behaviour: Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Waits until `count` requests reached `path` (or throws after `timeoutMs`). */
  async waitFor(path: string, count = 1, timeoutMs = 15_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.at(path).length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} requests at ${path}, got ${this.at(path).length}`);
      await sleep(25);
    }
    return this.at(path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Polls `check` until it returns a truthy value. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
