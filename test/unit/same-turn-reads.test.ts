import { readKey, SameTurnReads } from '../../src/db/same-turn-reads.js';

/**
 * Identical reads asked for in one turn of the event loop are sent once, when the loop next runs
 * its immediates; one asked for after that is sent again (the first may already be answered from an
 * older snapshot). Each asker's rows are its own; a failure reaches every asker.
 */

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A read that counts its sends and answers a row saying which send it was. */
function counted() {
  const read = { sent: 0, send: async () => [{ sent: ++read.sent, when: new Date(0), tags: ['a'] }] };
  return read;
}

test('identical reads asked for in one turn are sent once, when the loop next runs its immediates', async () => {
  const reads = new SameTurnReads();
  const read = counted();
  const asked = [reads.ask('k', read.send), reads.ask('k', read.send), reads.ask('k', read.send)];
  expect(read.sent).toBe(0); // not before the turn's immediates: a request read later in this turn may still join
  const answers = await Promise.all(asked);
  expect(read.sent).toBe(1);
  for (const rows of answers) expect(rows).toEqual([{ sent: 1, when: new Date(0), tags: ['a'] }]);
});

test('a read asked for once the identical one was sent is sent again', async () => {
  const reads = new SameTurnReads();
  let answer: (rows: object[]) => void = () => undefined;
  let sent = 0;
  const slow = () => {
    sent++;
    return new Promise<object[]>((resolve) => (answer = resolve));
  };
  const first = reads.ask('k', slow);
  await nextTurn(); // sent, not yet answered: its snapshot may be older than a request that comes now
  const second = reads.ask('k', async () => [{ sent: ++sent }]);
  answer([{ sent: 1 }]);
  expect(await first).toEqual([{ sent: 1 }]);
  expect(await second).toEqual([{ sent: 2 }]);
});

test('different keys are different reads', async () => {
  const reads = new SameTurnReads();
  const read = counted();
  await Promise.all([reads.ask('a', read.send), reads.ask('b', read.send)]);
  expect(read.sent).toBe(2);
});

test("each asker's rows are its own: a change one makes, nested or not, is not another's", async () => {
  const reads = new SameTurnReads();
  const read = counted();
  const [one, two] = await Promise.all([reads.ask('k', read.send), reads.ask('k', read.send)]);
  one![0]!.sent = 99;
  one![0]!.tags.push('changed');
  expect(two![0]).toEqual({ sent: 1, when: new Date(0), tags: ['a'] });
});

test('askers that only read share the rows when none may change them, else one copy among them', async () => {
  const reads = new SameTurnReads();
  const read = counted();
  const [a, b] = await Promise.all([reads.ask('k', read.send, true), reads.ask('k', read.send, true)]);
  expect(a).toBe(b); // no copy: neither changes them

  const mixed = new SameTurnReads();
  const asked = [mixed.ask('k', read.send, true), mixed.ask('k', read.send), mixed.ask('k', read.send, true), mixed.ask('k', read.send)];
  const [reader1, taker, reader2, other] = await Promise.all(asked);
  expect(reader1).toBe(reader2);
  expect(reader1).not.toBe(taker); // the taker may change its rows: the readers look at a copy made before it runs
  expect(other).not.toBe(taker);
  taker![0]!.tags.push('changed');
  expect(reader1![0]!.tags).toEqual(['a']);
  expect(other![0]!.tags).toEqual(['a']);
});

test("a copy keeps a JSON `__proto__` key as a key, as JSON.parse made it, not as the copy's prototype", async () => {
  const reads = new SameTurnReads();
  const parsed = async () => [{ payload: JSON.parse('{"__proto__": {"admin": true}, "name": "x"}') as Record<string, unknown> }];
  const [first, copy] = await Promise.all([reads.ask('j', parsed), reads.ask('j', parsed)]);
  for (const rows of [first!, copy!]) {
    expect(Object.keys(rows[0]!.payload)).toEqual(['__proto__', 'name']);
    expect(rows[0]!.payload.admin).toBeUndefined();
    expect(Object.getPrototypeOf(rows[0]!.payload)).toBe(Object.prototype);
  }
});

test('a failed read fails every asker; rows that cannot be copied (a cycle) fail only the askers given copies', async () => {
  const reads = new SameTurnReads();
  const failing = async (): Promise<object[]> => {
    throw new Error('database gone');
  };
  const failed = await Promise.allSettled([reads.ask('k', failing), reads.ask('k', failing)]);
  expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);

  const uncopyable = async () => {
    const row: Record<string, unknown> = {};
    row.self = row; // a cycle: no copy ends
    return [row];
  };
  const [first, second] = await Promise.allSettled([reads.ask('u', uncopyable), reads.ask('u', uncopyable)]);
  expect(first.status).toBe('fulfilled');
  expect(second.status).toBe('rejected');
});

test('parameters JSON cannot tell apart are never merged', () => {
  expect(readKey('q', ['x', 1, true, null])).not.toBeNull();
  expect(readKey('q', [1])).not.toBe(readKey('q', ['1']));
  expect(readKey('q', ['a'])).not.toBe(readKey('p', ['a']));
  for (const odd of [NaN, Infinity, undefined, new Date(0), { a: 1 }]) expect(readKey('q', [odd])).toBeNull();
});
