import type { Request } from 'express';
import { DomainError } from '../src/errors/domain-error.js';
import { MAX_BODY_BYTES, tooLarge } from '../src/http/body-limit.js';

/**
 * Reads a REST request body under the contract's rules: JSON only, uncompressed (415), at most
 * 1 MiB (413, refused before reading when Content-Length says so), valid
 * JSON (400 invalid_json) and an object (400 bad_request). No body reads as {}.
 */
export async function readJsonObject(req: Request): Promise<Record<string, unknown>> {
  const length = req.get('content-length');
  const hasBody = (length !== undefined && length !== '0') || req.get('transfer-encoding') !== undefined;
  if (!hasBody) return {};
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(type)) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json');
  }
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'compressed request bodies are not accepted');
  if (length !== undefined && Number(length) > MAX_BODY_BYTES) throw tooLarge();

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      Buffer.concat(chunks)
        .toString('utf8')
        .replace(/^\uFEFF/, ''),
    ); // a UTF-8 byte order mark is harmless
  } catch {
    throw new DomainError('INVALID_JSON', 'the request body is not valid JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new DomainError('BAD_REQUEST', 'the request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
