import { FairSlots, mapLimit, SharedSlots } from '../../src/concurrency/slots.js';

/** Lets every pending promise callback run (grants are resolved promises, not timers). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Work that yields once while it runs; `peak`: the most of its calls that were running at once. */
function overlapping() {
  let running = 0;
  const work = {
    peak: 0,
    run: async <T>(result?: T): Promise<T | undefined> => {
      running++;
      work.peak = Math.max(work.peak, running);
      await settle();
      running--;
      return result;
    },
  };
  return work;
}

/** A promise to resolve by hand. */
interface Gate {
  promise: Promise<void>;
  resolve: () => void;
}
function gate(): Gate {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('mapLimit', () => {
  test('results come in input order, whatever order the work ends in', async () => {
    const results = await mapLimit([30, 10, 20, 0], 2, async (ms) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return ms * 2;
    });
    expect(results).toEqual([60, 20, 40, 0]);
  });

  test('never runs more than `limit` at once, and does run that many', async () => {
    const work = overlapping();
    await mapLimit(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      () => work.run(),
    );
    expect(work.peak).toBe(3);
  });

  test('a limit above the number of items starts each item once', async () => {
    const seen: number[] = [];
    expect(await mapLimit([1, 2], 10, async (n) => (seen.push(n), n))).toEqual([1, 2]);
    expect(seen.sort()).toEqual([1, 2]);
  });

  test('no items: no work, an empty result', async () => {
    let calls = 0;
    expect(await mapLimit([], 4, async () => ++calls)).toEqual([]);
    expect(calls).toBe(0);
  });

  test('a failure rejects the whole map', async () => {
    await expect(
      mapLimit([1, 2, 3], 2, async (n) => {
        if (n === 2) throw new Error('boom');
        return n;
      }),
    ).rejects.toThrow('boom');
  });
});

describe('SharedSlots', () => {
  test('grants up to its size at once; the next waits for a release', async () => {
    const slots = new SharedSlots(2);
    const a = await slots.acquire([]);
    const b = await slots.acquire([]);
    let third: (() => void) | null = null;
    void slots.acquire([]).then((release) => (third = release));
    await settle();
    expect(third).toBeNull();
    a!();
    await settle();
    expect(third).toBeInstanceOf(Function);
    b!();
    third!();
  });

  test('a key holds at most its share, however many it asks for', async () => {
    const slots = new SharedSlots(4);
    const share = [{ key: 'client-a', max: 2 }];
    const granted: string[] = [];
    const releases: Array<() => void> = [];
    for (const name of ['a1', 'a2', 'a3']) {
      void slots.acquire(share).then((release) => {
        granted.push(name);
        releases.push(release!);
      });
    }
    await settle();
    expect(granted).toEqual(['a1', 'a2']);
    releases[0]!();
    await settle();
    expect(granted).toEqual(['a1', 'a2', 'a3']);
  });

  test('a waiter held back by its share does not hold back those behind it', async () => {
    const slots = new SharedSlots(3);
    const greedy = [{ key: 'greedy', max: 1 }];
    const granted: string[] = [];
    const releases = new Map<string, () => void>();
    const ask = (name: string, shares: Array<{ key: string; max: number }>) =>
      void slots.acquire(shares).then((release) => {
        granted.push(name);
        releases.set(name, release!);
      });
    ask('greedy-1', greedy);
    ask('greedy-2', greedy); // waits on its share, not on the semaphore
    ask('other', [{ key: 'other', max: 1 }]);
    await settle();
    expect(granted).toEqual(['greedy-1', 'other']);
    releases.get('greedy-1')!();
    await settle();
    expect(granted).toEqual(['greedy-1', 'other', 'greedy-2']);
  });

  test('waiters that fit are served in the order they came', async () => {
    const slots = new SharedSlots(1);
    const first = await slots.acquire([]);
    const granted: number[] = [];
    const releases: Array<() => void> = [];
    for (const n of [1, 2, 3]) {
      void slots.acquire([{ key: `k${n}`, max: 1 }]).then((release) => {
        granted.push(n);
        releases.push(release!);
      });
    }
    first!();
    for (let i = 0; i < 3; i++) {
      await settle();
      releases.shift()!();
    }
    await settle();
    expect(granted).toEqual([1, 2, 3]);
  });

  test('a holder counts against every key of its shares', async () => {
    const slots = new SharedSlots(10);
    const release = await slots.acquire([
      { key: 'address', max: 1 },
      { key: 'account', max: 5 },
    ]);
    let sameAddress = false;
    void slots.acquire([{ key: 'address', max: 1 }]).then(() => (sameAddress = true));
    const sameAccount = await slots.acquire([{ key: 'account', max: 5 }]);
    await settle();
    expect(sameAddress).toBe(false);
    expect(sameAccount).toBeInstanceOf(Function);
    release!();
    await settle();
    expect(sameAddress).toBe(true);
  });

  test('releasing twice frees one slot, not two', async () => {
    const slots = new SharedSlots(1);
    const release = await slots.acquire([]);
    const granted: string[] = [];
    void slots.acquire([]).then(() => granted.push('second'));
    void slots.acquire([]).then(() => granted.push('third'));
    release!();
    release!();
    await settle();
    expect(granted).toEqual(['second']);
  });

  test('an aborted signal gets null at once, and never takes a slot', async () => {
    const slots = new SharedSlots(1);
    const controller = new AbortController();
    controller.abort();
    expect(await slots.acquire([], controller.signal)).toBeNull();
    const release = await slots.acquire([]);
    expect(release).toBeInstanceOf(Function);
    release!();
  });

  test('a waiter whose signal aborts gets null and leaves the queue', async () => {
    const slots = new SharedSlots(1);
    const holder = await slots.acquire([]);
    const controller = new AbortController();
    const abandoned = slots.acquire([], controller.signal);
    let next: (() => void) | null = null;
    void slots.acquire([]).then((release) => (next = release));
    controller.abort();
    expect(await abandoned).toBeNull();
    holder!();
    await settle();
    expect(next).toBeInstanceOf(Function); // the slot went to the one still waiting
  });
});

describe('FairSlots', () => {
  test('runs at most `size` pieces of work at once, and returns their results', async () => {
    const slots = new FairSlots(2);
    const work = overlapping();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => slots.run(`key-${i}`, () => work.run(i))));
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(work.peak).toBe(2);
  });

  test('a key holds at most one slot at a time, even with slots free', async () => {
    const slots = new FairSlots(4);
    const work = overlapping();
    await Promise.all(Array.from({ length: 5 }, () => slots.run('one-account', () => work.run())));
    expect(work.peak).toBe(1);
  });

  test('round robin: a key that queued much does not make another wait for more than one piece of its work', async () => {
    const slots = new FairSlots(1);
    const order: string[] = [];
    const gates = new Map<string, Gate>();
    const run = (name: string) => {
      const opened = gate();
      gates.set(name, opened);
      return slots.run(name.slice(0, 1), async () => {
        order.push(name);
        await opened.promise;
      });
    };
    const all = [run('A1'), run('A2'), run('A3'), run('A4')];
    await settle();
    all.push(run('B1'), run('C1'));
    // Let each piece finish in turn, in whatever order the slots were granted.
    for (let i = 0; i < 6; i++) {
      await settle();
      gates.get(order[order.length - 1]!)!.resolve();
    }
    await Promise.all(all);
    expect(order).toHaveLength(6);
    // B and C queued while A1 ran: each starts before A has run two more pieces.
    const startedAfterQueueing = (name: string) => order.slice(1, order.indexOf(name)).filter((n) => n.startsWith('A')).length;
    expect(startedAfterQueueing('B1')).toBeLessThanOrEqual(1);
    expect(startedAfterQueueing('C1')).toBeLessThanOrEqual(1);
    expect(order.filter((n) => n.startsWith('A'))).toEqual(['A1', 'A2', 'A3', 'A4']); // one key's work stays in order
  });

  test('a failure frees the slot and the key', async () => {
    const slots = new FairSlots(1);
    await expect(
      slots.run('k', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await slots.run('k', async () => 'next')).toBe('next');
  });
});
