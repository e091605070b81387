import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';

/**
 * Where the relay (transport.ts) reads a git command's output from. Each chunk is handed to
 * `onChunk`, which answers false to have reading wait for `resume()` (the chunk may be the output's
 * own buffer, read into again after that); `onEnd` once git and everything holding its stdout are done.
 */
export interface GitOutput {
  start(onChunk: (chunk: Buffer) => boolean, onEnd: () => void): void;
  resume(): void;
}

/** The output of git started with `stdio: 'pipe'`: each read a new Buffer. */
export function pipedOutput(stdout: Readable): GitOutput {
  return {
    start(onChunk, onEnd) {
      stdout.on('data', (chunk: Buffer) => {
        if (!onChunk(chunk)) stdout.pause();
      });
      stdout.once('end', onEnd);
    },
    resume: () => stdout.resume(),
  };
}

/** One output socket: `gitEnd` goes to spawn as git's stdout; `output` reads what git writes into it. */
export interface OutputSocket {
  gitEnd: net.Socket;
  output: GitOutput;
  /** After spawn has duplicated `gitEnd` into git: closes the service's copy. */
  handedToGit(): void;
  /** git could not be started: closes both ends. */
  cancel(): void;
}

const TOKEN_BYTES = 16;
/** Bytes each output is read in: as many as one read of a socket gives at most. */
const BUFFER_BYTES = 64 * 1024;
/** A pairing not done in this long is given up (the listener swamped). */
const PAIRING_TIMEOUT_MS = 10_000;

/**
 * Output sockets: git's stdout read into ONE buffer of the service's own per command, instead of a
 * fresh one per read. A pack streamed through the service is read 64 KiB at a time, and with
 * `stdio: 'pipe'` each read allocates a new Buffer that lives until the next full collection: a
 * clone of 100 MB made about 2,000 of them, and sixteen clones at once made the service run a full
 * garbage collection every second, copy each read once more and fault its pages back in, so that
 * relaying the packs took more CPU than the git processes that made them. Node reads into a buffer
 * of one's own (`onread`) only on a socket it opens itself, so each pair is made by connecting to a
 * Unix socket this process listens on, in a directory only its user may enter: the accepted end
 * becomes git's stdout, the connecting end is read here.
 *
 * Each connection says a random token first, so an end is paired with the one that asked for it
 * whatever order connections are accepted in, and a connection from anyone else is dropped.
 */
export class OutputSockets {
  private readonly waiting = new Map<string, (socket: net.Socket) => void>();

  private constructor(private readonly socketPath: string) {}

  /** Listens in `dir` (which only the service's user may enter). Fails when it cannot, e.g. a path too long for a socket's name. */
  static async listen(dir: string): Promise<OutputSockets> {
    const sockets = new OutputSockets(path.join(dir, `git-output-${process.pid}.sock`));
    const server = net.createServer((socket) => sockets.accepted(socket));
    server.unref(); // it never keeps the process alive on its own
    server.listen(sockets.socketPath);
    await once(server, 'listening');
    // An accept that fails (out of file descriptors) fails that fetch's pairing, which then reads
    // through a pipe; the listener goes on.
    server.on('error', () => undefined);
    return sockets;
  }

  /** A new pair, its reading end paused until the relay starts it. */
  async open(): Promise<OutputSocket> {
    const token = randomBytes(TOKEN_BYTES);
    const key = token.toString('hex');
    let timer: NodeJS.Timeout | undefined;
    const accepted = new Promise<net.Socket>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('the output socket was not paired in time')), PAIRING_TIMEOUT_MS).unref();
      this.waiting.set(key, resolve);
    });
    let handlers: { onChunk: (chunk: Buffer) => boolean; onEnd: () => void } | null = null;
    const buffer = Buffer.allocUnsafe(BUFFER_BYTES);
    const reader = net.connect({
      path: this.socketPath,
      onread: { buffer, callback: (nread) => handlers!.onChunk(buffer.subarray(0, nread)) },
    });
    reader.on('error', () => undefined); // its end is seen as 'close'
    // Closed before it was paired: refused, or accepted and closed by a listener out of descriptors.
    const closedFirst = once(reader, 'close').then(() => {
      throw new Error('the output socket closed before it was paired');
    });
    reader.write(token);
    let gitEnd: net.Socket;
    try {
      [gitEnd] = await Promise.race([Promise.all([accepted, once(reader, 'connect')]), closedFirst]);
    } catch (error) {
      reader.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(key);
      closedFirst.catch(() => undefined); // the race is decided: its loser's outcome goes nowhere
    }
    reader.pause(); // git writes nothing before it is spawned: no read can have come yet
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      handlers?.onEnd();
    };
    reader.once('end', end);
    reader.once('close', end);
    return {
      gitEnd,
      output: {
        start(onChunk, onEnd) {
          handlers = { onChunk, onEnd };
          if (ended) onEnd();
          else reader.resume();
        },
        resume: () => reader.resume(),
      },
      handedToGit: () => gitEnd.destroy(),
      cancel: () => {
        gitEnd.destroy();
        reader.destroy();
      },
    };
  }

  /** A connection says its token; it is handed to the pairing that made it, or dropped. */
  private accepted(socket: net.Socket): void {
    let said = Buffer.alloc(0);
    const drop = () => socket.destroy();
    const timer = setTimeout(drop, PAIRING_TIMEOUT_MS).unref();
    socket.on('error', drop);
    socket.on('data', (chunk: Buffer) => {
      said = Buffer.concat([said, chunk]);
      if (said.length < TOKEN_BYTES) return;
      socket.removeAllListeners('data');
      socket.pause();
      clearTimeout(timer);
      const claim = this.waiting.get(said.subarray(0, TOKEN_BYTES).toString('hex'));
      if (!claim || said.length > TOKEN_BYTES) return drop();
      claim(socket);
    });
  }
}
