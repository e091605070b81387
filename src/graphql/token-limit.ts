import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error.js';
import { MAX_TOKENS } from './limits.js';

/**
 * Documents lexed and found within the limit, most recently seen last. Clients send the same few
 * documents over and over (their operations differ by variables), and lexing one costs as much as
 * the rest of a small query's checks: a document seen before is not lexed again. Bounded in entries
 * and in the length of what it keeps: at most KNOWN_MOST × KNOWN_LONGEST characters.
 */
const withinLimit = new Map<string, true>();
const KNOWN_MOST = 256;
const KNOWN_LONGEST = 8 * 1024;

/** Whether a document has more than MAX_TOKENS tokens; the lexer stops at the first one past it. */
function tooManyTokens(source: string): boolean {
  if (withinLimit.delete(source)) {
    withinLimit.set(source, true);
    return false;
  }
  const exceeded = lexedPastLimit(source);
  if (!exceeded && source.length <= KNOWN_LONGEST) {
    if (withinLimit.size >= KNOWN_MOST) withinLimit.delete(withinLimit.keys().next().value!);
    withinLimit.set(source, true);
  }
  return exceeded;
}

function lexedPastLimit(source: string): boolean {
  let exceeded = false;
  try {
    const parser = new MaxTokensParserWLexer(source, { n: MAX_TOKENS, onReject: [() => (exceeded = true)], propagateOnRejection: true });
    parser.parseDocument();
  } catch {
    // The limit, or a syntax error: Apollo reports the latter itself.
  }
  return exceeded;
}

/**
 * Refuses a GraphQL document of more than MAX_TOKENS tokens before Apollo parses it: every later
 * check (GraphQL's validation above all) takes time that grows with the document, and Apollo lets
 * no plugin refuse a request before its parser runs. Anything not a single document in `query`
 * (GET search parameters, or a JSON body) is left for Apollo to refuse.
 */
export function tokenLimit(send: (res: Response, error: DomainError) => void) {
  return (req: Request, res: Response, next: NextFunction) => {
    const query: unknown = req.method === 'GET' ? req.query.query : (req.body as { query?: unknown } | undefined)?.query;
    if (typeof query === 'string' && tooManyTokens(query)) {
      send(res, new DomainError('BAD_REQUEST', `the document has more than ${MAX_TOKENS} tokens (the limit)`));
      return;
    }
    next();
  };
}
