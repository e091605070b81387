import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { REF_GUARD_ENV } from '../git/hooks.js';
import type { PolicySession } from '../git/refs/ref-transaction.js';
import type { Logger } from '../logger.js';
import type { PushedHistory } from './requirements.js';

/** One branch update of a push, as git's `update` hook asks about it. */
export interface RefQuestion {
  ref: string;
  before: string;
  after: string;
}

/** Asks the hook what only git can tell about the update (its objects are in the push's quarantine). */
export type LearnHistory = (facts: Array<keyof PushedHistory>) => Promise<PushedHistory>;

/** Decides one update: the reason to refuse it, or null. */
export type DecideUpdate = (question: RefQuestion, learn: LearnHistory) => Promise<string | null>;

/** A line is a token and a ref name and two shas: far below this. Anything longer is not the hook. */
const MAX_LINE = 8 * 1024;
/** How long a connection has to send the push's token: the hook sends it at once. */
const TOKEN_MS = 5_000;
/** A hook that says nothing for this long has gone (git's own push deadline stops it anyway). */
const IDLE_MS = 60_000;

/**
 * The loopback socket a push's `update` hook asks through (src/git/hooks.ts): opened for one
 * push, on a port of its own, answering only connections that send the push's random token, and
 * closed when the push's git exits. Each connection is one question; a failure to decide refuses
 * the ref (the hook refuses without an answer), never lets it through.
 */
export async function openQuestions(decide: DecideUpdate, log: Logger): Promise<PolicySession> {
  const token = randomBytes(24).toString('hex');
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // Whoever is on the other end (the hook, or any local process that found the port) can reset
    // the connection at any moment: that ends the exchange, never the service.
    socket.on('error', () => socket.destroy());
    answer(socket, token, decide).catch((error: unknown) => {
      if (!socket.destroyed) log.error({ err: error }, 'a branch rule could not be checked; the ref is refused');
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // Past listening, an error (a failed accept: out of file handles) refuses what it would have answered.
  server.on('error', (error) => log.warn({ err: error }, 'the branch rules socket failed; refs asked about meanwhile are refused'));
  const { port } = server.address() as net.AddressInfo;
  return {
    env: { [REF_GUARD_ENV]: `${port} ${token}` },
    close: async () => {
      // Stop accepting first: a connection accepted after the others were destroyed would hold the close.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

async function answer(socket: net.Socket, token: string, decide: DecideUpdate): Promise<void> {
  // The hook sends its question at once; a connection that does not is not the hook.
  socket.setTimeout(TOKEN_MS, () => socket.destroy());
  const lines = lineReader(socket);
  const [sent = '', ref = '', before = '', after = ''] = (await lines()).split(' ');
  if (!sameToken(sent, token) || !/^[0-9a-f]{40}$/.test(before) || !/^[0-9a-f]{40}$/.test(after)) {
    socket.destroy();
    return;
  }
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  const reason = await decide({ ref, before, after }, async (facts) => {
    socket.write(`need ${facts.join(' ')}\n`);
    const told = new Map((await lines()).split(' ').map((fact) => fact.split('=') as [string, string]));
    const fact = (name: keyof PushedHistory) => (told.has(name) ? told.get(name) === '1' : null);
    return { forced: fact('forced'), merges: fact('merges') };
  });
  socket.end(reason === null ? 'ok\n' : `refuse ${reason.replace(/[\r\n]+/g, ' ')}\n`);
}

function sameToken(sent: string, token: string): boolean {
  return sent.length === token.length && timingSafeEqual(Buffer.from(sent), Buffer.from(token));
}

/** Reads the socket a line at a time; a closed socket or an overlong line ends the exchange. */
function lineReader(socket: net.Socket): () => Promise<string> {
  let buffered = '';
  const waiting: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = [];
  let ended: Error | null = null;
  const flush = () => {
    for (let at = buffered.indexOf('\n'); at >= 0 && waiting.length; at = buffered.indexOf('\n')) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      waiting.shift()!.resolve(line);
    }
    if (ended) for (const waiter of waiting.splice(0)) waiter.reject(ended);
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    if (buffered.length > MAX_LINE && !buffered.includes('\n')) socket.destroy();
    flush();
  });
  socket.once('close', () => {
    ended = new Error('the hook went away before asking');
    flush();
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      waiting.push({ resolve, reject });
      flush();
    });
}
