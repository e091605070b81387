import { closingReferences } from '../../src/pulls/closing-keywords.js';

test('every closing keyword, in any case, with or without a colon', () => {
  const words = ['close', 'closes', 'closed', 'fix', 'fixes', 'fixed', 'resolve', 'resolves', 'resolved'];
  words.forEach((word, i) => expect(closingReferences([`${word} #${i + 1}`])).toEqual([i + 1]));
  expect(closingReferences(['FIXES #7', 'Resolved: #8'])).toEqual([7, 8]);
});

test('mentions, other words and numbers glued to words are not closing references', () => {
  expect(closingReferences(['see #1', 'prefix #2', 'closing #3', 'unfixed #4', 'fixes#5', 'fixes #6abc', null])).toEqual([]);
});

test('each number once, in order of first mention', () => {
  expect(closingReferences(['fixes #3 and closes #1', 'fixes #3'])).toEqual([3, 1]);
});

test('a merge closes at most the first 50 issues named', () => {
  const body = Array.from({ length: 80 }, (_, i) => `fixes #${i + 1}`).join('\n');
  expect(closingReferences([body])).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
});
