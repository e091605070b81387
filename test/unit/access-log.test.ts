import { Writable } from 'node:stream';
import { pino } from 'pino';
import { accessLog, type AccessLine } from '../../src/http/access-log.js';
import { isoTime } from '../../src/logger.js';

/** A logger configured as createLogger's, writing into an array. */
function capturing(level = 'info') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = pino({ level, base: { service: 'cairn' }, timestamp: isoTime }, destination);
  return { log, lines };
}

const entries: AccessLine[] = [
  { requestId: 'e3f6c8ec-78d2-4fe1-96c2-bf1d1bf158d6', method: 'GET', path: '/repos/repo_01', status: 200, ms: 1.1, sql: 0 },
  // What a client chooses: quotes, backslashes, control characters and non-ASCII in the path and id.
  { requestId: 'a"b\\c', method: 'PATCH', path: '/repos/%22x\u0001/é\u2028✓', status: 404, ms: 12.3, sql: 4 },
];

test.each(entries)('the access line is the line pino writes for the same fields', (line) => {
  const written = capturing();
  accessLog(written.log)(line);
  const byPino = capturing();
  byPino.log.info({ ...line }, 'request');
  // The two can fall in different milliseconds: compare without the time, then its format.
  const withoutTime = (text: string) => text.replace(/"time":"[^"]*"/, '"time":""');
  expect(written.lines).toHaveLength(1);
  expect(withoutTime(written.lines[0]!)).toBe(withoutTime(byPino.lines[0]!));
  expect(JSON.parse(written.lines[0]!)).toMatchObject({ ...line, msg: 'request', level: 30, service: 'cairn' });
  expect(JSON.parse(written.lines[0]!).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('no line when the level is above info', () => {
  const quiet = capturing('warn');
  accessLog(quiet.log)(entries[0]!);
  expect(quiet.lines).toEqual([]);
});

test('a destination that routes lines by level gets them through pino, with their level', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = pino({ base: { service: 'cairn' }, timestamp: isoTime }, pino.multistream([{ level: 'info', stream: sink }]));
  accessLog(log)(entries[0]!);
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ ...entries[0], msg: 'request', level: 30 });
});
