import dns from 'node:dns';
import type * as NodeHttp from 'node:http';
import { http } from '../http/node-http.js';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Logger } from '../logger.js';
import { DestinationPolicy } from './destination-policy.js';

const MAX_RESPONSE_BODY = 64 * 1024;

export interface AttemptResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  truncated: boolean;
}

export interface AttemptOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  response: AttemptResponse | null;
}

class PolicyRefusal extends Error {
  readonly code = 'EPOLICY';
}

/**
 * What a delivery record says of a refused destination, for a name and a literal address alike: the
 * host as the webhook's URL gives it, never what it resolved to. Records are read by repository
 * admins, and an address there would answer internal DNS for anyone who can create a webhook.
 */
function refusal(host: string): string {
  return `destination refused by policy: ${host} is not allowed by CAIRN_WEBHOOK_ALLOWED_HOSTS`;
}

/**
 * Sends one webhook request: POST with the given headers and body,
 * a whole-request timeout (DNS, connect, response and body), no redirects
 * (3xx is a failure), and the destination policy applied to the address
 * actually dialled. Never throws: every way of failing becomes an outcome.
 */
export class HttpSender {
  // No per-host socket cap: the worker bounds attempts per webhook and per process, and a cap here
  // would queue one webhook's requests behind another's hanging ones on the same host.
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64 }),
  };
  private readonly lookup: LookupFunction;

  constructor(
    private readonly policy: DestinationPolicy,
    private readonly log: Logger,
  ) {
    this.lookup = (hostname, options, callback) => {
      dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) return callback(error, '', 0);
        const allowed = (addresses as dns.LookupAddress[]).filter((a) => this.policy.allows(hostname, a.address));
        if (allowed.length === 0) {
          // The addresses are for operators only (the log); the record names the host alone.
          const resolved = (addresses as dns.LookupAddress[]).map((a) => a.address);
          this.log.warn({ host: hostname, addresses: resolved }, 'webhook destination refused by policy');
          return callback(new PolicyRefusal(refusal(hostname)), '', 0);
        }
        if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, allowed);
        callback(null, allowed[0]!.address, allowed[0]!.family);
      });
    };
  }

  async send(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptOutcome> {
    const started = performance.now();
    const finish = (outcome: Omit<AttemptOutcome, 'durationMs'>): AttemptOutcome => ({
      ...outcome,
      durationMs: Math.round(performance.now() - started),
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return finish({ ok: false, statusCode: null, error: 'invalid URL', response: null });
    }
    const literal = DestinationPolicy.literalAddress(target);
    if (literal && !this.policy.allows(literal, literal)) {
      return finish({ ok: false, statusCode: null, error: refusal(target.hostname), response: null });
    }
    try {
      const response = await this.request(target, headers, body, AbortSignal.timeout(timeoutMs), false);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return finish({ ok, statusCode: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}`, response });
    } catch (error) {
      return finish({ ok: false, statusCode: null, error: describe(error, timeoutMs), response: null });
    }
  }

  /**
   * One request within the attempt's deadline (`signal`). A kept-alive socket the receiver closes
   * just as a request goes out on it (its idle timeout, say) fails with ECONNRESET or EPIPE before
   * any answer: the receiver never read the request. It is sent once more, on a new connection,
   * as Node's documentation of `reusedSocket` advises; counted a failure, it would have waited
   * for its retry though the receiver was up.
   */
  private request(
    target: URL,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
    fresh: boolean,
  ): Promise<AttemptResponse> {
    const payload = Buffer.from(body, 'utf8');
    const client = target.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      let answered = false;
      const request = client.request(
        target,
        {
          method: 'POST',
          headers: { ...headers, 'Content-Length': String(payload.length) },
          agent: fresh ? false : this.agents[target.protocol as 'http:' | 'https:'],
          lookup: this.lookup,
          signal,
        },
        (response) => {
          answered = true;
          const chunks: Buffer[] = [];
          let size = 0;
          let truncated = false;
          const done = () =>
            resolve({
              statusCode: response.statusCode ?? 0,
              headers: flattenHeaders(response.headers),
              body: Buffer.concat(chunks).toString('utf8'),
              truncated,
            });
          response.on('data', (chunk: Buffer) => {
            if (truncated) return;
            const room = MAX_RESPONSE_BODY - size;
            chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
            size += Math.min(chunk.length, room);
            if (chunk.length > room) {
              truncated = true; // the rest is not needed: stop reading and free the socket
              response.destroy();
              done();
            }
          });
          response.on('end', done);
          response.on('error', (error) => (truncated ? undefined : reject(error)));
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        const closedUnderIt = error.code === 'ECONNRESET' || error.code === 'EPIPE';
        if (!fresh && !answered && request.reusedSocket && closedUnderIt && !signal.aborted) {
          resolve(this.request(target, headers, body, signal, true));
        } else reject(error);
      });
      request.end(payload);
    });
  }

  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}

function flattenHeaders(headers: NodeHttp.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function describe(error: unknown, timeoutMs: number): string {
  const e = error as NodeJS.ErrnoException & { name?: string; cause?: unknown };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  if (error instanceof PolicyRefusal) return error.message;
  if (e?.code === 'ENOTFOUND' || e?.code === 'EAI_AGAIN') return `DNS lookup failed (${e.code})`;
  if (e?.code) return `connection failed (${e.code})`;
  return e?.message ?? 'request failed';
}
