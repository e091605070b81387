/**
 * Builds the GraphQL IDE (page/main.tsx: GraphiQL and React from npm) into dist/assets/graphiql/, run
 * by `npm run build`: the page loads nothing but these files, so it works offline and sends nothing
 * anywhere but to the service. File names carry a content hash: they are served with long caching.
 */
import { build } from 'esbuild';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ASSETS_DIR, ASSETS_PATH, PAGE_FILE, ROOT } from './assets.js';

async function main(): Promise<void> {
  if (await upToDate()) return; // `npm test` and `npm run …` build again after `npm ci` built: the bundle is the slow part
  await rm(ASSETS_DIR, { recursive: true, force: true });
  await mkdir(ASSETS_DIR, { recursive: true });
  const result = await build({
    entryPoints: { graphiql: path.join(ROOT, 'src/graphql/graphiql/page/main.tsx') },
    outdir: ASSETS_DIR,
    entryNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (!script || !style) throw new Error(`esbuild wrote no script or style sheet: ${outputs.join(', ')}`);
  await writeFile(PAGE_FILE, page(`${ASSETS_PATH}/${script}`, `${ASSETS_PATH}/${style}`));
}

/** The page is newer than every input of the bundle: its sources and the installed packages. */
async function upToDate(): Promise<boolean> {
  const built = await stat(PAGE_FILE).catch(() => null);
  if (!built) return false;
  const pageDir = path.join(ROOT, 'src/graphql/graphiql/page');
  const inputs = [...(await readdir(pageDir)).map((name) => path.join(pageDir, name)), path.join(ROOT, 'package-lock.json')];
  for (const input of inputs) {
    if ((await stat(input)).mtimeMs > built.mtimeMs) return false;
  }
  return true;
}

const page = (script: string, style: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Cairn GraphQL</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="${style}" />
    <script type="module" src="${script}"></script>
  </head>
  <body>
    <div id="root"></div>
  </body>
</html>
`;

await main();
