import { DomainError } from '../errors/domain-error.js';

/** The largest request body REST and GraphQL read. */
export const MAX_BODY_BYTES = 1024 * 1024;

export const tooLarge = () => new DomainError('PAYLOAD_TOO_LARGE', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
