import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** dist/, from this file's compiled place: dist/src/graphql/graphiql/. */
const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The checkout whose dist/ this is: where the page's sources are. */
export const ROOT = path.dirname(DIST);

/** Where `npm run build` writes the IDE, and the URL path it is served under (no token needed). */
export const ASSETS_DIR = path.join(DIST, 'assets/graphiql');
export const ASSETS_PATH = '/assets/graphiql';

/** The page itself, served at GET /graphql to a browser. */
export const PAGE_FILE = path.join(ASSETS_DIR, 'index.html');
