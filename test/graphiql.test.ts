import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { systemChromium } from './support/browser.js';
import { CairnServer, ROOT } from './support/server.js';

/**
 * The GraphQL IDE at GET /graphql: served to a browser without a token, from the service's own
 * assets (no CDN, no telemetry); a pasted token runs queries. Driven in Debian's chromium.
 */
let server: CairnServer;

beforeAll(async () => {
  server = CairnServer.sharedServer();
});
afterAll(() => server.destroy());

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

/** The page's HTML, and the script and style sheet it names. */
async function page() {
  const res = await fetch(`${server.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
  const html = await res.text();
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]);
  return { res, html, assets };
}

describe('over plain HTTP', () => {
  test('a browser GET /graphql without a token gets the page', async () => {
    const { res, html, assets } = await page();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(html).toContain('<div id="root">');
    // Everything the page names is on this origin: no http(s):// or protocol-relative URL.
    expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(assets).toEqual([
      expect.stringMatching(/^\/assets\/graphiql\/graphiql-\w+\.css$/),
      expect.stringMatching(/^\/assets\/graphiql\/graphiql-\w+\.js$/),
    ]);
  });

  test('its assets answer without a token, with their types and long caching', async () => {
    const { assets } = await page();
    const types: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
    for (const asset of assets) {
      const res = await fetch(`${server.url}${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(types[path.extname(asset)]);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect((await fetch(`${server.url}/assets/graphiql/nothing-here.js`)).status).toBe(404);
    expect((await fetch(`${server.url}/assets/graphiql/../../graphql`)).status).toBe(401); // normalised by fetch: /graphql
    // Out of the assets folder: fetch normalises `..` and `%2e%2e`, not an encoded slash.
    const escape = await fetch(`${server.url}/assets/graphiql/..%2F..%2F..%2Fpackage.json`);
    expect([403, 404]).toContain(escape.status);
    expect(await escape.text()).not.toContain('"name": "cairn"');
    const post = await fetch(`${server.url}${assets[0]}`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  test('every other /graphql request still needs a token', async () => {
    const asJson = await fetch(`${server.url}/graphql`, { headers: { accept: 'application/json' } });
    expect(asJson.status).toBe(401);
    const noAccept = await fetch(`${server.url}/graphql`);
    expect(noAccept.status).toBe(401);
    // GraphQL over GET from a browser's address bar: an operation, not the page.
    const query = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ viewer { login } }')}`, {
      headers: { accept: BROWSER_ACCEPT },
    });
    expect(query.status).toBe(401);
    const post = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { accept: BROWSER_ACCEPT, 'content-type': 'application/json' },
      body: '{"query":"{ viewer { login } }"}',
    });
    expect(post.status).toBe(401);
  });

  test("Apollo's hosted landing page is gone: an authenticated browser GET gets Cairn's page", async () => {
    const res = await fetch(`${server.url}/graphql`, { headers: { accept: BROWSER_ACCEPT, authorization: `Bearer ${server.adminToken}` } });
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(html).toContain('/assets/graphiql/');
    expect(html).not.toMatch(/apollographql|embeddable-sandbox|cdn\./i);
  });
});

const found = systemChromium();
if ('reason' in found) console.warn(`graphiql.test.ts: skipping the browser test: ${found.reason}`);
const inBrowser = 'path' in found ? describe : describe.skip;

inBrowser('in a real browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: 'path' in found ? found.path : undefined, args: ['--no-sandbox'] });
  });
  afterAll(() => browser?.close());

  test('loads from the service alone, takes a token and runs { viewer { login } }', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const tab = await context.newPage();
    const requests: string[] = [];
    tab.on('request', (request) => requests.push(request.url()));
    const failures: string[] = [];
    tab.on('pageerror', (error) => failures.push(error.message));

    await tab.goto(`${server.url}/graphql`, { waitUntil: 'networkidle' });
    await tab.locator('.graphiql-query-editor .CodeMirror').waitFor();

    // Committing the token (Enter) makes GraphiQL fetch the schema again, now authenticated.
    const introspected = tab.waitForResponse(
      (response) =>
        response.url() === `${server.url}/graphql` && response.status() === 200 && /__schema/.test(response.request().postData() ?? ''),
    );
    await tab.fill('#cairn-token', server.adminToken);
    await tab.press('#cairn-token', 'Enter');
    await introspected;
    expect(await tab.evaluate(() => sessionStorage.getItem('cairn.token'))).toBe(server.adminToken);

    // GraphiQL's editor closes brackets as they are typed: the query is set through CodeMirror.
    const editor = tab.locator('.graphiql-query-editor .CodeMirror');
    await editor.evaluate(
      (element, query) => (element as unknown as { CodeMirror: { setValue(value: string): void } }).CodeMirror.setValue(query),
      '{ viewer { login } }',
    );
    await tab.click('.graphiql-execute-button');
    await tab.locator('.result-window').filter({ hasText: '"login": "admin"' }).waitFor({ timeout: 30_000 });

    const screenshots = path.join(ROOT, 'test-output');
    await mkdir(screenshots, { recursive: true });
    await tab.screenshot({ path: path.join(screenshots, 'graphiql.png') });

    const origin = new URL(server.url).origin;
    expect(requests.length).toBeGreaterThan(2);
    expect(requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin)).toEqual([]);
    expect(failures).toEqual([]);
    await context.close();
  });
});
