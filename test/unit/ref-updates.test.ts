import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MAX_PUSH_OPTION_BYTES, MAX_PUSH_OPTIONS, NO_PUSH_DETAILS, readPushDetails } from '../../src/git/refs/push-details.js';
import { parseReport, planRefUpdates, type ReportedUpdate } from '../../src/git/refs/ref-updates.js';

/**
 * Push recording's pure core (ref-updates.ts): from what earlier events recorded, what
 * receive-pack reported and what is on disk, the ref changes to announce — the events always end
 * up describing the refs on disk. And the push's options and certificate as the pre-receive hook
 * wrote them (push-details.ts): anything unexpected ignored, every value bounded.
 * (test/git-ref-plan.test.ts covers the main cases; these are the edges.)
 */
const ZERO = '0'.repeat(40);
const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((x) => x.repeat(40)) as [string, string, string, string];
const refs = (entries: Record<string, string>) => new Map(Object.entries(entries));
const line = (ref: string, before: string, after: string): ReportedUpdate => ({ ref, before, after });

/** Applies a plan to `recorded`, as recording its events does. */
function apply(recorded: Map<string, string>, updates: Array<{ ref: string; before: string; after: string }>) {
  const state = new Map(recorded);
  for (const update of updates) {
    expect(state.get(update.ref) ?? ZERO).toBe(update.before); // each update starts where the last left the ref
    if (update.after === ZERO) state.delete(update.ref);
    else state.set(update.ref, update.after);
  }
  return state;
}

describe('planRefUpdates', () => {
  test('the usual case: the report is the plan', () => {
    const plan = planRefUpdates(
      refs({ 'refs/heads/main': A }),
      [line('refs/heads/main', A, B), line('refs/heads/new', ZERO, B)],
      refs({ 'refs/heads/main': B, 'refs/heads/new': B }),
      'push',
    );
    expect(plan.updates).toEqual([
      { ref: 'refs/heads/main', before: A, after: B, cause: 'push' },
      { ref: 'refs/heads/new', before: ZERO, after: B, cause: 'push' },
    ]);
    expect([...plan.previousTips]).toEqual([A]);
  });

  test('no report (receive-pack died after moving refs): the difference with the disk is the push', () => {
    const plan = planRefUpdates(refs({ 'refs/heads/main': A, 'refs/tags/old': C }), [], refs({ 'refs/heads/main': B }), 'push');
    expect(plan.updates).toEqual([
      { ref: 'refs/heads/main', before: A, after: B, cause: 'push' },
      { ref: 'refs/tags/old', before: C, after: ZERO, cause: 'push' },
    ]);
  });

  test('a report whose old value was never recorded: the gap is announced first, as an outside change', () => {
    const plan = planRefUpdates(refs({ 'refs/heads/main': A }), [line('refs/heads/main', C, D)], refs({ 'refs/heads/main': D }), 'push');
    expect(plan.updates).toEqual([
      { ref: 'refs/heads/main', before: A, after: C, cause: 'outside' },
      { ref: 'refs/heads/main', before: C, after: D, cause: 'push' },
    ]);
    expect(new Set(plan.previousTips)).toEqual(new Set([A, C]));
  });

  test('reconciliation (no pusher): everything is an outside change; nothing to do when nothing differs', () => {
    expect(planRefUpdates(refs({ 'refs/heads/main': A }), [], refs({ 'refs/heads/main': A }), 'outside').updates).toEqual([]);
    expect(planRefUpdates(refs({}), [], refs({ 'refs/heads/x': A }), 'outside').updates).toEqual([
      { ref: 'refs/heads/x', before: ZERO, after: A, cause: 'outside' },
    ]);
  });

  test('a deletion is a push update to zero, and the deleted tip is a previous tip', () => {
    const recorded = refs({ 'refs/heads/main': A, 'refs/heads/gone': B });
    const plan = planRefUpdates(recorded, [line('refs/heads/gone', B, ZERO)], refs({ 'refs/heads/main': A }), 'push');
    expect(plan.updates).toEqual([{ ref: 'refs/heads/gone', before: B, after: ZERO, cause: 'push' }]);
    expect(plan.previousTips).toEqual(new Set([A, B]));
  });

  test('the zero id is never a previous tip', () => {
    const plan = planRefUpdates(refs({}), [line('refs/heads/new', ZERO, A)], refs({ 'refs/heads/new': A }), 'push');
    expect(plan.previousTips.has(ZERO)).toBe(false);
    expect(plan.previousTips.size).toBe(0);
  });

  test('a reported line that changes nothing announces nothing, unless the recorded value differs', () => {
    expect(
      planRefUpdates(refs({ 'refs/heads/main': A }), [line('refs/heads/main', A, A)], refs({ 'refs/heads/main': A }), 'push').updates,
    ).toEqual([]);
    expect(
      planRefUpdates(refs({ 'refs/heads/main': A }), [line('refs/heads/main', B, B)], refs({ 'refs/heads/main': B }), 'push').updates,
    ).toEqual([{ ref: 'refs/heads/main', before: A, after: B, cause: 'outside' }]);
  });

  test('a ref reported twice is followed through both lines, in the report order', () => {
    const plan = planRefUpdates(
      refs({ 'refs/heads/main': A }),
      [line('refs/heads/main', A, B), line('refs/heads/main', B, C)],
      refs({ 'refs/heads/main': C }),
      'push',
    );
    expect(plan.updates).toEqual([
      { ref: 'refs/heads/main', before: A, after: B, cause: 'push' },
      { ref: 'refs/heads/main', before: B, after: C, cause: 'push' },
    ]);
  });

  test('the report order is kept; refs that differ afterwards follow, sorted, with the unreported cause', () => {
    const plan = planRefUpdates(
      refs({ 'refs/heads/main': A }),
      [line('refs/heads/z', ZERO, A), line('refs/heads/a', ZERO, B)],
      refs({ 'refs/heads/main': A, 'refs/heads/z': A, 'refs/heads/a': B, 'refs/tags/v2': D, 'refs/tags/v1': C }),
      'outside',
    );
    expect(plan.updates.map((u) => [u.ref, u.cause])).toEqual([
      ['refs/heads/z', 'push'],
      ['refs/heads/a', 'push'],
      ['refs/tags/v1', 'outside'],
      ['refs/tags/v2', 'outside'],
    ]);
  });

  test('a reported change the disk does not show is followed by one more update back to the disk', () => {
    // receive-pack reported main A→B, but something moved it to C before the lock was taken again.
    const plan = planRefUpdates(refs({ 'refs/heads/main': A }), [line('refs/heads/main', A, B)], refs({ 'refs/heads/main': C }), 'push');
    expect(plan.updates).toEqual([
      { ref: 'refs/heads/main', before: A, after: B, cause: 'push' },
      { ref: 'refs/heads/main', before: B, after: C, cause: 'push' },
    ]);
    // And a reported creation that is not on disk is undone the same way.
    expect(planRefUpdates(refs({}), [line('refs/heads/x', ZERO, B)], refs({}), 'outside').updates).toEqual([
      { ref: 'refs/heads/x', before: ZERO, after: B, cause: 'push' },
      { ref: 'refs/heads/x', before: B, after: ZERO, cause: 'outside' },
    ]);
  });

  test('whatever the three views, the plan is a chain of updates from the recorded refs to the disk', () => {
    const shas = [ZERO, A, B, C, D];
    const names = ['refs/heads/main', 'refs/heads/dev', 'refs/tags/v1'];
    let seed = 7;
    const pick = <T>(items: T[]): T => items[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % items.length]!;
    const randomRefs = () => {
      const map = new Map<string, string>();
      for (const name of names) {
        const sha = pick(shas);
        if (sha !== ZERO) map.set(name, sha);
      }
      return map;
    };
    for (let round = 0; round < 300; round++) {
      const recorded = randomRefs();
      const disk = randomRefs();
      const reported = Array.from({ length: pick([0, 1, 2, 3]) }, () => line(pick(names), pick(shas), pick(shas)));
      const recordedCopy = new Map(recorded);
      const plan = planRefUpdates(recorded, reported, disk, pick(['push', 'outside'] as const));
      expect(apply(recorded, plan.updates)).toEqual(disk);
      expect(plan.updates.every((u) => u.before !== u.after)).toBe(true);
      expect(recorded).toEqual(recordedCopy); // the recorded view is not changed
      for (const sha of recorded.values()) expect(plan.previousTips.has(sha)).toBe(true);
    }
  });
});

describe('parseReport', () => {
  test('well-formed lines in order; empty text is no updates', () => {
    expect(parseReport('')).toEqual([]);
    expect(parseReport(`${A} ${B} refs/heads/main\n${B} ${ZERO} refs/heads/gone`)).toEqual([
      { before: A, after: B, ref: 'refs/heads/main' },
      { before: B, after: ZERO, ref: 'refs/heads/gone' },
    ]);
  });

  test.each([
    ['upper-case ids', `${A.toUpperCase()} ${B} refs/heads/main`],
    ['a short id', `${A.slice(1)} ${B} refs/heads/main`],
    ['a name outside refs/', `${A} ${B} HEAD`],
    ['a name with a space', `${A} ${B} refs/heads/a b`],
    ['two spaces', `${A}  ${B} refs/heads/main`],
    ['a leading space', ` ${A} ${B} refs/heads/main`],
    ['a bare refs/', `${A} ${B} refs/`],
  ])('ignores %s', (_what, text) => {
    expect(parseReport(text)).toEqual([]);
  });

  test('malformed lines among good ones are skipped, the good ones kept', () => {
    expect(parseReport(`${A} ${B} refs/heads/main\nnonsense\n${A} ${B}\n${A} ${B} HEAD\n${ZERO} ${C} refs/tags/v1\n`)).toEqual([
      { before: A, after: B, ref: 'refs/heads/main' },
      { before: ZERO, after: C, ref: 'refs/tags/v1' },
    ]);
  });
});

describe('readPushDetails', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cairn-unit-push-details-'));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  let count = 0;
  async function read(records: string[] | string) {
    const file = path.join(dir, `details-${++count}`);
    await fs.writeFile(file, typeof records === 'string' ? records : records.map((r) => `${r}\0`).join(''));
    return readPushDetails(file);
  }

  test('no file, or an empty one: no options and no certificate', async () => {
    expect(await readPushDetails(path.join(dir, 'missing'))).toEqual(NO_PUSH_DETAILS);
    expect(await read('')).toEqual({ options: [], certificate: null });
  });

  test('options in the order given; a value may hold = and be empty', async () => {
    expect(await read(['option=ci.skip', 'option=merge_request.target=main', 'option='])).toEqual({
      options: ['ci.skip', 'merge_request.target=main', ''],
      certificate: null,
    });
  });

  test(`at most ${MAX_PUSH_OPTIONS} options are kept`, async () => {
    const details = await read(Array.from({ length: MAX_PUSH_OPTIONS + 5 }, (_, i) => `option=o${i}`));
    expect(details.options).toHaveLength(MAX_PUSH_OPTIONS);
    expect(details.options.at(-1)).toBe(`o${MAX_PUSH_OPTIONS - 1}`);
  });

  test(`an option is cut to ${MAX_PUSH_OPTION_BYTES} bytes, never through a character`, async () => {
    const exact = 'x'.repeat(MAX_PUSH_OPTION_BYTES);
    const { options } = await read([`option=${exact}`, `option=${exact}y`, `option=a${'é'.repeat(600)}`, `option=a${'😀'.repeat(300)}`]);
    expect(options[0]).toBe(exact);
    expect(options[1]).toBe(exact);
    expect(options[2]).toBe(`a${'é'.repeat(511)}`); // 1 + 511 × 2 = 1023 bytes: the 1024th byte began a character
    expect(options[3]).toBe(`a${'😀'.repeat(255)}`);
    for (const option of options) expect(Buffer.byteLength(option)).toBeLessThanOrEqual(MAX_PUSH_OPTION_BYTES);
  });

  test('records without =, unknown names and a missing final NUL are handled', async () => {
    expect(await read('garbage\0unknown=1\0option=a\0option=b')).toEqual({ options: ['a', 'b'], certificate: null });
  });

  test('a good signature by a trusted key is verified; its fields are kept', async () => {
    const details = await read([
      'cert.id=' + A,
      'cert.status=G',
      'cert.signer=Ann <ann@example.com>',
      'cert.key=ABCDEF0123456789',
      'cert.nonce_status=OK',
    ]);
    expect(details.certificate).toEqual({
      status: 'G',
      verified: true,
      signer: 'Ann <ann@example.com>',
      key: 'ABCDEF0123456789',
      nonce_status: 'OK',
    });
  });

  test.each(['B', 'U', 'X', 'Y', 'R', 'E', 'N', 'g'])('status %s is not verified', async (status) => {
    const details = await read([`cert.id=${A}`, `cert.status=${status}`]);
    expect(details.certificate).toMatchObject({ status, verified: false });
  });

  test('a certificate without a status cannot be checked (E); empty fields are null', async () => {
    expect((await read([`cert.id=${A}`, 'cert.status=', 'cert.signer=', 'cert.key=', 'cert.nonce_status='])).certificate).toEqual({
      status: 'E',
      verified: false,
      signer: null,
      key: null,
      nonce_status: null,
    });
  });

  test('no certificate without its id, whatever else is there', async () => {
    expect((await read(['cert.status=G', 'cert.signer=Ann'])).certificate).toBeNull();
    expect((await read(['cert.id=', 'cert.status=G'])).certificate).toBeNull();
  });

  test('certificate fields are bounded to 256 characters', async () => {
    const details = await read([`cert.id=${A}`, 'cert.status=G', `cert.signer=${'s'.repeat(1000)}`]);
    expect(details.certificate!.signer).toBe('s'.repeat(256));
  });
});
