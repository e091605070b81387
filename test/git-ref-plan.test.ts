import { parseReport, planRefUpdates } from '../src/git/refs/ref-updates.js';

/** The pure core of push recording: which ref changes to announce, given three views of a repository. */
const ZERO = '0'.repeat(40);
const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((x) => x.repeat(40)) as [string, string, string, string];
const refs = (entries: Record<string, string>) => new Map(Object.entries(entries));

test('the usual case: the report is the plan', () => {
  const plan = planRefUpdates(
    refs({ 'refs/heads/main': A }),
    [
      { ref: 'refs/heads/main', before: A, after: B },
      { ref: 'refs/heads/new', before: ZERO, after: B },
    ],
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
  const plan = planRefUpdates(
    refs({ 'refs/heads/main': A }),
    [{ ref: 'refs/heads/main', before: C, after: D }],
    refs({ 'refs/heads/main': D }),
    'push',
  );
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

test('report parsing ignores anything malformed', () => {
  expect(parseReport(`${A} ${B} refs/heads/main\nnonsense\n${A} ${B}\n${A} ${B} HEAD\n${ZERO} ${C} refs/tags/v1\n`)).toEqual([
    { before: A, after: B, ref: 'refs/heads/main' },
    { before: ZERO, after: C, ref: 'refs/tags/v1' },
  ]);
});
