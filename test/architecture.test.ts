import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './support/server.js';

const run = promisify(execFile);

/**
 * The directions between folders (.dependency-cruiser.cjs): no import cycle, the core never imports
 * the REST facade, the platform names no capability, each capability imports only those before it.
 */
test('the code keeps the directions written down in .dependency-cruiser.cjs', async () => {
  const bin = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
  const result = await run(process.execPath, [bin, 'src', 'rest-facade', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'], {
    cwd: ROOT,
  }).catch((error: { stdout: string; stderr: string }) => error);
  expect(result.stdout).toContain('no dependency violations found');
}, 60_000);
