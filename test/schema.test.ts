import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './support/server.js';

const run = promisify(execFile);

describe('generated artefacts are in sync', () => {
  test('schema/schema.graphql matches the resolvers', async () => {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'dist/src/scripts/emit-schema.js'), '--check'], { cwd: ROOT });
    expect(stdout).toContain('up to date');
  });

  test('rest-facade/generated matches the schema and the facade operations', async () => {
    const bin = path.join(ROOT, 'node_modules/@graphql-codegen/cli/cjs/bin.js');
    await expect(run(process.execPath, [bin, '--config', 'codegen.yml', '--check'], { cwd: ROOT })).resolves.toBeDefined();
  }, 60_000);
});
