import { GroupCommit } from '../../src/db/group-commit.js';

/**
 * Group commit: what queues while a statement runs goes together in the next, at most `most` at once
 * and, with `distinct`, never two items of one name in a batch (one statement may touch a row once);
 * a batch the database failed is answered as a whole, one that failed otherwise item by item.
 */

/** A write that records its batches and answers each item with itself, after a turn of the event loop. */
function recording(fail?: (batch: string[]) => Error | null) {
  const batches: string[][] = [];
  const write = async (batch: string[]) => {
    batches.push(batch);
    await new Promise((resolve) => setImmediate(resolve));
    const error = fail?.(batch);
    if (error) throw error;
    return batch;
  };
  return { batches, write };
}

test('items queued behind a statement go together in the next, at most `most` at a time, in order', async () => {
  const { batches, write } = recording();
  const commits = new GroupCommit(write, 3);
  const answers = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((item) => commits.add('k', item)));
  expect(answers).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  expect(batches).toEqual([['a'], ['b', 'c', 'd'], ['e', 'f']]);
});

test('with `distinct`, a batch names each name once: a second item of a name waits for the next batch, after those before it', async () => {
  const { batches, write } = recording();
  const context = (item: string) => item[0]!; // 'x1' and 'x2' share the name 'x'
  const commits = new GroupCommit(write, 10, { distinct: context });
  await Promise.all(['s0', 'x1', 'x2', 'y1', 'x3', 'y2', 'z1'].map((item) => commits.add('k', item)));
  expect(batches).toEqual([['s0'], ['x1', 'y1', 'z1'], ['x2', 'y2'], ['x3']]);
});

test('a batch the database failed (past its deadline) is answered as a whole; any other failure item by item', async () => {
  const late = recording((batch) => (batch.length > 1 ? new Error('Query read timeout') : null));
  const commitsLate = new GroupCommit(late.write, 10);
  const answered = await Promise.allSettled(['a', 'b', 'c'].map((item) => commitsLate.add('k', item)));
  expect(answered.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  expect(late.batches).toEqual([['a'], ['b', 'c']]); // not written again one by one

  const refused = recording((batch) => (batch.includes('bad') ? new Error('check constraint violated') : null));
  const commitsRefused = new GroupCommit(refused.write, 10);
  const outcomes = await Promise.allSettled(['a', 'b', 'bad', 'c'].map((item) => commitsRefused.add('k', item)));
  expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  expect(refused.batches).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
});
