import { boundText } from '../../src/db/bound-query.js';

/**
 * The text both drivers are sent: `?` placeholders numbered in order, and a statement whose values
 * do not match its placeholders refused before it is sent (PostgreSQL would answer 08P01, which reads
 * as a broken connection, a 503).
 */
test('placeholders are numbered in order', () => {
  expect(boundText('select ? as a, ?::jsonb as b where c = ?', [1, '{}', 'x'])).toBe('select $1 as a, $2::jsonb as b where c = $3');
  expect(boundText('select 1', [])).toBe('select 1');
});

test('a count that does not match the values is refused, memoised or not', () => {
  const memo = new Map<string, { text: string; count: number }>();
  expect(() => boundText('select ?, ?', [1], memo)).toThrow('the statement has 2 placeholders for 1 values');
  expect(boundText('select ?, ?', [1, 2], memo)).toBe('select $1, $2');
  expect(memo.get('select ?, ?')).toEqual({ text: 'select $1, $2', count: 2 });
  expect(() => boundText('select ?, ?', [1, 2, 3], memo)).toThrow('the statement has 2 placeholders for 3 values');
});
