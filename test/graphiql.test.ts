import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { systemChromium } from './support/browser.js';
import { CairnServer, ROOT } from './support/server.js';

/**
 * The GraphQL IDE at GET /graphql: served to a browser without a token, from the service's own
 * assets (no CDN, no telemetry); no request before a token is entered, then the schema at once. Driven in Debian's chromium.
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

  /** How long the page may take to act on an entered token (it waits 400 ms for typing to pause). */
  const BOUND = { timeout: 10_000 };
  const INTROSPECTION = /__schema/;

  /** A fresh tab on /graphql, recording what it sent, what /graphql answered and any script error. */
  async function openIde() {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const tab = await context.newPage();
    const requests: string[] = [];
    const statuses: number[] = []; // of /graphql's answers
    const failures: string[] = [];
    tab.on('request', (request) => requests.push(request.url()));
    tab.on('response', (response) => {
      if (response.url() === `${server.url}/graphql` && response.request().method() === 'POST') statuses.push(response.status());
    });
    tab.on('pageerror', (error) => failures.push(error.message));
    await tab.goto(`${server.url}/graphql`, { waitUntil: 'networkidle' });
    await tab.locator('.graphiql-query-editor .CodeMirror').waitFor();
    const introspection = (status: number) =>
      tab.waitForResponse(
        (response) =>
          response.url() === `${server.url}/graphql` &&
          response.status() === status &&
          INTROSPECTION.test(response.request().postData() ?? ''),
        BOUND,
      );
    return { context, tab, requests, statuses, failures, introspection, notice: tab.locator('#cairn-token-notice') };
  }

  test('without a token: no request that would be refused, and a notice says where the token goes', async () => {
    const { context, tab, requests, statuses, failures, notice } = await openIde();
    expect(statuses).toEqual([]);
    expect(requests.filter((url) => new URL(url).pathname === '/graphql')).toEqual([`${server.url}/graphql`]); // the page itself
    await expect(notice.isVisible()).resolves.toBe(true);
    const text = await notice.textContent();
    expect(text).toContain('A token is needed');
    expect(text).toContain('Token field');
    expect(text).toContain('data/admin-token');

    // Run without a token answers in the response pane, without asking the service.
    await tab.click('.graphiql-execute-button');
    await tab.locator('.result-window').filter({ hasText: 'A token is needed' }).waitFor(BOUND);
    expect(statuses).toEqual([]);
    expect(failures).toEqual([]);
    await context.close();
  });

  test('an entered token loads the schema at once: Docs shows Query before anything runs; then { viewer { login } } runs', async () => {
    const { context, tab, requests, statuses, failures, introspection, notice } = await openIde();

    // Only filled in (no Enter, the field keeps the focus): the schema is asked for within the bound.
    const introspected = introspection(200);
    await tab.fill('#cairn-token', server.adminToken);
    await introspected;
    await expect(tab.locator('#cairn-token:focus').count()).resolves.toBe(1);
    expect(await tab.evaluate(() => sessionStorage.getItem('cairn.token'))).toBe(server.adminToken);
    await notice.waitFor({ state: 'hidden', ...BOUND });

    await tab.click('[aria-label="Show Documentation Explorer"]');
    await tab.click('.graphiql-doc-explorer a.graphiql-doc-explorer-type-name:text-is("Query")', BOUND);
    await tab
      .locator('.graphiql-doc-explorer-title')
      .filter({ hasText: /^Query$/ })
      .waitFor(BOUND);

    // Autocompletion knows the schema too: typing `vie` inside the braces offers `viewer`.
    type CodeMirror = { setValue(value: string): void; setCursor(line: number, ch: number): void; focus(): void };
    const editor = tab.locator('.graphiql-query-editor .CodeMirror');
    await editor.evaluate((element) => {
      const codeMirror = (element as unknown as { CodeMirror: CodeMirror }).CodeMirror;
      codeMirror.setValue('{  }');
      codeMirror.setCursor(0, 2);
      codeMirror.focus();
    });
    await tab.keyboard.type('vie');
    await tab
      .locator('.CodeMirror-hint')
      .filter({ hasText: /^viewer$/ })
      .waitFor(BOUND);
    await tab.keyboard.press('Escape');
    expect(statuses).toEqual([200]); // nothing ran: the introspection alone

    // GraphiQL's editor closes brackets as they are typed: the query is set through CodeMirror.
    await editor.evaluate(
      (element, query) => (element as unknown as { CodeMirror: CodeMirror }).CodeMirror.setValue(query),
      '{ viewer { login } }',
    );
    await tab.click('.graphiql-execute-button');
    await tab.locator('.result-window').filter({ hasText: '"login": "admin"' }).waitFor({ timeout: 30_000 });

    const screenshots = path.join(ROOT, 'test-output');
    await mkdir(screenshots, { recursive: true });
    await tab.screenshot({ path: path.join(screenshots, 'graphiql.png') });

    const origin = new URL(server.url).origin;
    expect(statuses).toEqual([200, 200]);
    expect(requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== origin)).toEqual([]);
    expect(failures).toEqual([]);
    await context.close();
  });

  test("a wrong token: the service's 401 message, shown once; a right one then clears it", async () => {
    const { context, tab, statuses, failures, introspection, notice } = await openIde();

    const refused = introspection(401);
    await tab.fill('#cairn-token', 'cairn_pat_not_a_real_token');
    await refused;
    await tab.locator('#cairn-token-notice[role="alert"]').waitFor(BOUND);
    expect(await notice.textContent()).toBe('The service refused this token: the token is malformed, unknown, revoked or expired.');
    await expect(tab.getByText('the token is malformed, unknown, revoked or expired').count()).resolves.toBe(1);

    // Enter takes the right token at once; by its answer a second try of the wrong one would have been sent.
    const introspected = introspection(200);
    await tab.fill('#cairn-token', server.adminToken);
    await tab.press('#cairn-token', 'Enter');
    await introspected;
    await notice.waitFor({ state: 'hidden', ...BOUND });
    expect(statuses).toEqual([401, 200]);
    expect(failures).toEqual([]);
    await context.close();
  });
});
