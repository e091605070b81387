import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The filters `npm start` sets are lifted at run time, and V8 then optimizes for real: checked in a
 * node of the project's own version started with those filters and `--trace-opt`, which names every
 * function it compiles. A hot loop before the 20th request compiles nothing; the same loop after it
 * is compiled by Maglev and TurboFan, in the background. (Should a Node upgrade make V8 read the
 * filters only at start, this fails, instead of the service running unoptimized for good.)
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const module = path.resolve(here, '../../dist/src/memory/deferred-optimization.js');

const script = `
const { optimizeOnceBusy } = await import(${JSON.stringify(module)});
const { EventEmitter } = await import('node:events');
const server = new EventEmitter();
const log = { info: (fields, msg) => console.log('LOG', msg, JSON.stringify(fields)) };
function hot(n) { let sum = 0; for (let i = 0; i < n; i++) sum += (i * 7) % 13; return sum; }
const spin = () => { for (let k = 0; k < 300; k++) hot(10_000); };
optimizeOnceBusy(log, server, (req) => req.url !== '/readyz');
spin();
console.log('MARK before');
for (let i = 0; i < 25; i++) server.emit('request', { url: '/readyz' });
spin();
console.log('MARK probes');
for (let i = 0; i < 20; i++) server.emit('request', { url: '/repos' });
const until = Date.now() + 3000;
while (Date.now() < until) { spin(); await new Promise((resolve) => setTimeout(resolve, 10)); }
console.log('MARK after');
process.exit(0);
`;

test('the compilers compile nothing before the 20th request that is use, and optimize once it came', () => {
  const run = spawnSync(process.execPath, ['--maglev-filter=-*', '--turbo-filter=-*', '--trace-opt', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(0);
  const [beforeProbes, afterProbes, afterUse] = run.stdout.split(/MARK \w+\n/);
  const compiled = (text: string) => text.split('\n').filter((line) => line.startsWith('[completed compiling'));
  expect(compiled(beforeProbes!)).toEqual([]);
  expect(compiled(afterProbes!)).toEqual([]);
  expect(afterUse).toContain('LOG optimizing compilers on {"reason":"requests"}');
  const hotCompiles = compiled(afterUse!).filter((line) => line.includes('hot'));
  expect(hotCompiles.some((line) => line.includes('(target MAGLEV)'))).toBe(true);
  expect(hotCompiles.some((line) => line.includes('(target TURBOFAN'))).toBe(true);
  // In the background, as when the compilers are on from the start.
  expect(run.stdout).not.toMatch(/compiling method .*<JSFunction hot .*mode: ConcurrencyMode::kSynchronous/);
});
