import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { DomainError } from '../errors/domain-error.js';
import { MAX_BODY_BYTES, tooLarge } from './body-limit.js';
import { closeAfterAnswer } from './lingering-close.js';

/** How long an API request's body may take to arrive after its headers. */
const BODY_DEADLINE_MS = 60_000;
/** API request bodies one account may be sending at once in this process. */
const BODIES_PER_ACCOUNT = 32;

const reading = new Map<string, number>();

/**
 * The body of a REST or GraphQL request as bytes, read within the bounds that keep slow bodies from
 * taking the service: at most MAX_BODY_BYTES (413), within BODY_DEADLINE_MS (408), and at most
 * BODIES_PER_ACCOUNT of one account at once (429). A refused body's connection closes after the answer (closeAfterAnswer).
 * The bytes stay a Buffer — outside the JavaScript heap — until the body is whole: 200 bodies held
 * one byte short of their end, read as strings, had run the heap out. `account` is the
 * authenticated caller (authentication comes first: a stranger's body is never read).
 */
export async function readBodyBytes(req: IncomingMessage, res: ServerResponse, account: string): Promise<Buffer> {
  const held = reading.get(account) ?? 0;
  const refused = refusedUnread(req, held);
  if (refused) {
    closeAfterAnswer(req, res);
    throw refused;
  }
  reading.set(account, held + 1);
  try {
    return await collect(req, res);
  } finally {
    const left = reading.get(account)! - 1;
    if (left) reading.set(account, left);
    else reading.delete(account);
  }
}

/** Why a body is refused before any of it is read (its announced size, its account's bodies being read), or null. */
function refusedUnread(req: IncomingMessage, held: number): DomainError | null {
  const length = req.headers['content-length'];
  if (length !== undefined && Number(length) > MAX_BODY_BYTES) return tooLarge();
  if (held < BODIES_PER_ACCOUNT) return null;
  return new DomainError('RATE_LIMITED', `At most ${BODIES_PER_ACCOUNT} request bodies of one account are read at once; try again.`, [], 1);
}

/** The body's bytes; on refusal, the rest is read and dropped, and the connection closes after the answer. */
function collect(req: IncomingMessage, res: ServerResponse): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: Error | null) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
      if (!error) return resolve(Buffer.concat(chunks));
      closeAfterAnswer(req, res);
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) settle(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => settle(null);
    const onError = (error: Error) => settle(error);
    const onAborted = () => settle(new DomainError('BAD_REQUEST', 'the request body ended early'));
    const timer = setTimeout(
      () => settle(new DomainError('REQUEST_TIMEOUT', `The request body did not arrive within ${BODY_DEADLINE_MS / 1000} s.`)),
      BODY_DEADLINE_MS,
    );
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
  });
}

/** A body's bytes as JSON: UTF-8 (a byte order mark is harmless), gzip-compressed where `gzip` allows; INVALID_JSON otherwise. */
export function parseJsonBytes(bytes: Buffer, encoding: string | undefined, gzip: boolean): unknown {
  const coding = (encoding ?? 'identity').trim().toLowerCase();
  let text: string;
  if (coding === 'identity') text = bytes.toString('utf8');
  else if (coding === 'gzip' && gzip) {
    try {
      text = gunzipSync(bytes, { maxOutputLength: MAX_BODY_BYTES }).toString('utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
      throw new DomainError('BAD_REQUEST', 'the request body is not valid gzip');
    }
  } else throw new DomainError('UNSUPPORTED_MEDIA_TYPE', `request bodies compressed with ${coding} are not accepted`);
  try {
    return JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw new DomainError('INVALID_JSON', 'the request body is not valid JSON');
  }
}
