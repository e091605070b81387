import type { Request, Response } from 'express';
import { DomainError } from '../src/errors/domain-error.js';
import { viewerOf } from '../src/http/rate-limit-headers.js';
import { parseJsonBytes, readBodyBytes } from '../src/http/request-body.js';

/**
 * Reads a REST request body under the contract's rules: JSON only, uncompressed (415), at most
 * 1 MiB (413, refused before reading when Content-Length says so), valid
 * JSON (400 invalid_json) and an object (400 bad_request), within the bounds of
 * readBodyBytes (time, and bodies per account at once). No body reads as {}.
 */
export async function readJsonObject(req: Request, res: Response): Promise<Record<string, unknown>> {
  const length = req.get('content-length');
  const hasBody = (length !== undefined && length !== '0') || req.get('transfer-encoding') !== undefined;
  if (!hasBody) return {};
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !/^application\/[\w.+-]+\+json$/.test(type)) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json');
  }
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'compressed request bodies are not accepted');
  const parsed = parseJsonBytes(await readBodyBytes(req, res, viewerOf(res).userId), encoding, false);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new DomainError('BAD_REQUEST', 'the request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
