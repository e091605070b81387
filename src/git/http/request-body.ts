import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { Transform, Writable, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import { DomainError } from '../../errors/domain-error.js';
import { closeAfterAnswer } from '../../http/lingering-close.js';
import type { ClientPace } from './client-pace.js';

/** A request body up to this size is kept in memory... */
const MEMORY_PER_REQUEST = 2 * 1024 * 1024;
/** ...while all of them together stay under this; beyond either, bodies go to a file in the data dir. */
const MEMORY_FOR_ALL = 64 * 1024 * 1024;
let memoryInUse = 0;

/** The decompressor a request's Content-Encoding calls for: null for none, an error for one we do not speak. */
export function bodyDecoder(encoding: string | undefined): Transform | DomainError | null {
  const value = (encoding ?? '').trim().toLowerCase();
  if (value === '' || value === 'identity') return null;
  if (value === 'gzip' || value === 'x-gzip') return zlib.createGunzip();
  return new DomainError('UNSUPPORTED_MEDIA_TYPE', `unsupported Content-Encoding: ${value.slice(0, 40)}`);
}

/** Counts bytes and fails the stream past the limit (a bound on what a request can push through). */
export class ByteLimit extends Transform {
  private seen = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) callback(new DomainError('PAYLOAD_TOO_LARGE', 'the request body is too large'));
    else callback(null, chunk);
  }
}

/** The cut-off for a request body that arrives too slowly: its reader stops and discards what still comes (closeAfterAnswer). */
export function tooSlow(pace: ClientPace): DomainError {
  return new DomainError('REQUEST_TIMEOUT', `The request arrived too slowly (under ${pace.floor}) and was cut off; try again.`);
}

/** A request body read to its end (decompressed), in memory or in a file, to hand to git. */
export interface RequestBody {
  /** The first bytes (up to 64 KiB), to look at what the request asks for. */
  readonly head: Buffer;
  /** The whole body when it is held in memory (small), null when it waits in a file. */
  readonly whole: Buffer | null;
  /** Writes the whole body into `target` and ends it. */
  pipeTo(target: Writable): void;
  /** Frees the memory or removes the file. */
  dispose(): Promise<void>;
}

/**
 * Collects a body in memory, within MEMORY_PER_REQUEST and the process-wide MEMORY_FOR_ALL, and
 * moves it to a file in `spoolDir` once it outgrows either.
 */
class BodySpool extends Writable {
  private chunks: Buffer[] = [];
  private inMemory = 0;
  private file: { path: string; handle: fs.promises.FileHandle } | null = null;
  private disposed = false;

  constructor(private readonly spoolDir: string) {
    // Not destroyed when it finishes: destroying disposes of the body, which git has yet to read
    // (the file was removed before git's read of it opened it, or its memory counted as free). The
    // request's owner disposes of it once git is done; a failed request destroys it explicitly.
    super({ autoDestroy: false });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.store(chunk).then(() => callback(), callback);
  }

  private async store(chunk: Buffer): Promise<void> {
    if (this.disposed) return; // what was still on its way when the request was cut off
    if (!this.file && this.inMemory + chunk.length <= MEMORY_PER_REQUEST && memoryInUse + chunk.length <= MEMORY_FOR_ALL) {
      this.chunks.push(chunk);
      this.inMemory += chunk.length;
      memoryInUse += chunk.length;
      return;
    }
    if (!this.file) {
      const file = path.join(this.spoolDir, randomUUID());
      const handle = await fs.promises.open(file, 'wx', 0o600);
      if (this.disposed) {
        // Disposed of while the file was being made, before dispose could know it: it goes here.
        await handle.close().catch(() => undefined);
        await fs.promises.rm(file, { force: true });
        return;
      }
      this.file = { path: file, handle };
      for (const held of this.chunks) await this.file.handle.write(held);
      this.chunks = [this.head()];
      this.releaseMemory();
    }
    await this.file.handle.write(chunk);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.file) this.file.handle.close().then(() => callback(), callback);
    else callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.dispose().then(() => callback(error), callback);
  }

  private head(): Buffer {
    return Buffer.concat(this.chunks).subarray(0, 64 * 1024);
  }

  private releaseMemory(): void {
    memoryInUse -= this.inMemory;
    this.inMemory = 0;
  }

  body(): RequestBody {
    const head = this.head();
    const dispose = () => this.dispose();
    const file = this.file?.path;
    if (!file) {
      const whole = Buffer.concat(this.chunks);
      return { head, whole, pipeTo: (target) => target.end(whole), dispose };
    }
    return {
      head,
      whole: null,
      pipeTo: (target) => {
        const source = fs.createReadStream(file);
        source.on('error', () => target.destroy());
        target.once('close', () => source.destroy()); // git stopped reading early: let go of the file
        source.pipe(target);
      },
      dispose,
    };
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.releaseMemory();
    this.chunks = [];
    if (this.file) {
      await this.file.handle.close().catch(() => undefined);
      await fs.promises.rm(this.file.path, { force: true });
    }
  }
}

/**
 * Reads a fetch request (wants, haves, options) to its end before anything runs for it, so that a
 * client that sends slowly holds a connection and nothing else: no fetch slot, no git. Bounded in
 * size (`maxBytes`, after decompression) and in pace (`pace`: too slow, and it is cut off with 408).
 * Resolves with the body, with the error to answer, or with null when the client went away.
 */
export function readRequestBody(
  req: IncomingMessage,
  res: ServerResponse,
  pace: ClientPace,
  options: { maxBytes: number; spoolDir: string },
): Promise<RequestBody | DomainError | null> {
  const decoder = bodyDecoder(req.headers['content-encoding']);
  if (decoder instanceof DomainError) {
    req.resume();
    return Promise.resolve(decoder);
  }
  const limiter = new ByteLimit(options.maxBytes);
  const spool = new BodySpool(options.spoolDir);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: RequestBody | DomainError | null) => {
      if (settled) return;
      settled = true;
      req.off('close', gone);
      if (!(outcome && 'pipeTo' in outcome)) void spool.dispose().catch(() => undefined);
      resolve(outcome);
    };
    /** Stops reading; `keepConnection`: discard the rest so the answer can still be sent, instead of dropping the connection. */
    const fail = (error: DomainError, keepConnection: boolean) => {
      req.unpipe();
      if (keepConnection) closeAfterAnswer(req, res);
      else req.destroy();
      settle(error);
    };
    const gone = () => {
      if (!req.complete) settle(null);
    };
    req.on('close', gone);
    pace.onSlowRequest(() => fail(tooSlow(pace), true));
    limiter.on('error', (error: DomainError) => fail(error, false)); // stop receiving what nobody will read
    spool.on('error', (error) => {
      void spool.dispose().catch(() => undefined);
      if (!settled) {
        settled = true;
        req.destroy();
        reject(error); // the disk failed us: an internal error
      }
    });
    spool.on('finish', () => settle(spool.body()));
    if (decoder) {
      decoder.on('error', () => fail(new DomainError('BAD_REQUEST', 'the request body is not valid gzip'), false));
      req.pipe(decoder).pipe(limiter).pipe(spool);
    } else {
      req.pipe(limiter).pipe(spool);
    }
  });
}
