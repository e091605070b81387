import express, { type Request, type RequestHandler, type Router } from 'express';
import { readFileSync } from 'node:fs';
import type { Logger } from '../../logger.js';
import { ASSETS_DIR, PAGE_FILE } from './assets.js';

/**
 * What the page may load: only this origin (the assets, /graphql); inline styles because
 * CodeMirror and GraphiQL set them; data: for GraphiQL's embedded fonts and images. A page that
 * tried to reach a CDN or a telemetry host would be refused by the browser.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "connect-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** The media types a GraphQL client asks for, listed first so that `*\/*` or no Accept prefers them. */
const GRAPHQL_TYPES = ['application/graphql-response+json', 'application/json'];

/**
 * A browser navigating to /graphql: a GET that prefers HTML to JSON and asks no operation
 * (`?query=` is GraphQL over GET, answered by Apollo behind the token as before).
 */
function isPageRequest(req: Request): boolean {
  return req.query.query === undefined && req.accepts([...GRAPHQL_TYPES, 'text/html']) === 'text/html';
}

/**
 * GET /graphql for a browser: the GraphQL IDE, no token needed (it holds no data; its requests
 * to /graphql carry the token pasted into it). Anything else goes on to GraphQL. Without built
 * assets (a build that skipped them) /graphql is GraphQL only, and the log says why.
 */
export function graphiqlPage(log: Logger): RequestHandler {
  let html: string | null = null;
  try {
    html = readFileSync(PAGE_FILE, 'utf8');
  } catch (err) {
    log.warn({ err, file: PAGE_FILE }, 'the GraphQL IDE was not built (npm run build): GET /graphql serves GraphQL only');
  }
  return (req, res, next) => {
    if (html === null || !isPageRequest(req)) return next();
    res
      .status(200)
      .set({
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-cache',
        Vary: 'Accept',
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      })
      .send(html);
  };
}

/** The IDE's script and style sheet (and licence notes): content-hashed names, so cached for a year. */
export function graphiqlAssets(): Router {
  const router = express.Router();
  router.use(
    express.static(ASSETS_DIR, {
      index: false,
      immutable: true,
      maxAge: '365d',
      setHeaders: (res, file) => {
        res.setHeader('X-Content-Type-Options', 'nosniff');
        if (file.endsWith('.html')) res.setHeader('Cache-Control', 'no-cache'); // the page's name carries no hash
      },
    }),
  );
  return router;
}
