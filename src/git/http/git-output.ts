import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';

/**
 * A socket pair for a git command's output, read into ONE buffer of our own per command instead of a
 * fresh one per read: a pack streamed through the service is read 64 KiB at a time, and with
 * `stdio: 'pipe'` each read allocates a new Buffer that lives until the next full collection. A clone
 * of 100 MB made about 2,000 of them; sixteen clones at once made the service run a full garbage
 * collection every second, copy each read once more and fault its pages back in, so that relaying
 * the packs took more CPU than the git processes that made them. Node offers reading into a buffer of
 * one's own (`onread`) only for a socket it opens itself, so the pair is made by connecting to a Unix
 * socket this process listens on (in a directory only its user may enter); the accepted end becomes
 * git's stdout (spawn duplicates it into git), the connecting end is read here.
 *
 * Each connection says a random token first, so an end is paired with the one that asked for it
 * whatever order connections are accepted in, and a connection from anyone else is dropped.
 */

/** What a pair's reading end hands over: `chunk` is valid until `callback` returns or, when it returns false, until `resume()`. */
export type OnChunk = (chunk: Buffer) => boolean;

export interface OutputPair {
  /** git's end: pass it as stdout to spawn, then `close()` our copy. */
  gitEnd: net.Socket;
  /** Our end: data goes to the `onChunk` given; 'end' when git and every process holding its stdout have exited. */
  reader: net.Socket;
  /** Closes our copy of git's end (after spawn has duplicated it into git). */
  close(): void;
}

const TOKEN_BYTES = 16;
/** A pair not accepted in this long is given up (the listener is gone or swamped). */
const PAIRING_TIMEOUT_MS = 10_000;

let listening: Promise<{ server: net.Server; socketPath: string }> | null = null;
const waiting = new Map<string, (socket: net.Socket) => void>();

function listen(dir: string): Promise<{ server: net.Server; socketPath: string }> {
  listening ??= (async () => {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.chmod(dir, 0o700);
    const socketPath = path.join(dir, `git-output-${process.pid}.sock`);
    await fs.rm(socketPath, { force: true });
    const server = net.createServer({ pauseOnConnect: false }, (socket) => {
      let said = Buffer.alloc(0);
      const drop = () => socket.destroy();
      const timer = setTimeout(drop, PAIRING_TIMEOUT_MS);
      socket.on('error', drop);
      socket.on('data', function onToken(chunk: Buffer) {
        said = Buffer.concat([said, chunk]);
        if (said.length < TOKEN_BYTES) return;
        socket.off('data', onToken);
        socket.pause();
        clearTimeout(timer);
        const claim = waiting.get(said.subarray(0, TOKEN_BYTES).toString('hex'));
        if (!claim || said.length > TOKEN_BYTES) return drop();
        claim(socket);
      });
    });
    server.unref(); // it never keeps the process alive on its own
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // An accept that fails (out of file descriptors) fails that fetch's pairing, which then reads
    // through a pipe; the listener goes on.
    server.on('error', () => undefined);
    return { server, socketPath };
  })();
  // A listener that failed (a data dir whose path is too long for a socket's name) stays failed:
  // every fetch then reads through a pipe, without trying again.
  listening.catch(() => undefined);
  return listening;
}

/**
 * A pair whose reading end reads into `buffer` and hands each read to `onChunk` (see OnChunk);
 * `dir` holds the listening socket (created 0700).
 */
export async function outputPair(dir: string, buffer: Buffer, onChunk: OnChunk): Promise<OutputPair> {
  const { socketPath } = await listen(dir);
  const token = randomBytes(TOKEN_BYTES);
  const key = token.toString('hex');
  let timer: NodeJS.Timeout | undefined;
  const forget = () => {
    clearTimeout(timer);
    waiting.delete(key);
  };
  const accepted = new Promise<net.Socket>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('the output socket was not accepted in time')), PAIRING_TIMEOUT_MS);
    timer.unref();
    waiting.set(key, resolve);
  });
  const reader = net.connect({
    path: socketPath,
    onread: { buffer, callback: (nread: number, buf: Buffer) => onChunk(buf.subarray(0, nread)) },
  });
  reader.on('error', () => undefined); // its end is seen as 'close'
  // Closed before it was paired (refused, or accepted and closed by a listener out of descriptors).
  const closedFirst = once(reader, 'close').then(() => {
    throw new Error('the output socket closed before it was paired');
  });
  reader.write(token);
  try {
    const [gitEnd] = await Promise.race([Promise.all([accepted, once(reader, 'connect')]), closedFirst]);
    return { gitEnd, reader, close: () => gitEnd.destroy() };
  } catch (error) {
    reader.destroy();
    throw error;
  } finally {
    forget();
    closedFirst.catch(() => undefined); // the race is decided: its loser's outcome goes nowhere
  }
}
