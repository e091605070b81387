import { DomainError, Problems } from '../../src/errors/domain-error.js';
import {
  applyTitleAndBody,
  checkBranchName,
  checkDescription,
  checkRepositoryName,
  checkTitleAndBody,
  isValidBranchName,
} from '../../src/repositories/names.js';

/** The problems a check adds, as the VALIDATION_FAILED error would list them. */
function problemsOf(check: (problems: Problems) => void) {
  const problems = new Problems();
  check(problems);
  try {
    problems.throwIfAny();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
    return (error as DomainError).details.map(({ field, code }) => ({ field, code }));
  }
  return [];
}

describe('repository names: 1-100 of [A-Za-z0-9._-], not . or .., not ending in .git', () => {
  const problems = (name: string) => problemsOf((p) => checkRepositoryName(name, p));

  test.each(['a', 'my-repo', 'My_Repo.v2', '.hidden', 'x.gitx', 'git', '.github', 'a'.repeat(100), '-leading-dash'])(
    '%j is a name',
    (name) => {
      expect(problems(name)).toEqual([]);
    },
  );

  test.each([
    ['', 'invalid_length'],
    ['a'.repeat(101), 'invalid_length'],
    ['.', 'invalid_format'],
    ['..', 'invalid_format'],
    ['repo.git', 'invalid_format'],
    ['repo.GIT', 'invalid_format'],
    ['.git', 'invalid_format'],
    ['a b', 'invalid_format'],
    ['a/b', 'invalid_format'],
    ['ü', 'invalid_format'],
    ['a\nb', 'invalid_format'],
  ])('%j is refused (%s)', (name, code) => {
    expect(problems(name)).toEqual([{ field: 'name', code }]);
  });

  test('the field is named as the caller says', () => {
    expect(problemsOf((p) => checkRepositoryName('', p, 'newName'))).toEqual([{ field: 'newName', code: 'invalid_length' }]);
  });
});

describe('branch names, as git check-ref-format --branch', () => {
  test.each(['main', 'feature/x', 'release/1.2', 'a.b', 'user@host', 'HEADS', 'x-HEAD', 'a/b/c', 'é', 'a'.repeat(200)])(
    '%j is valid',
    (name) => {
      expect(isValidBranchName(name)).toBe(true);
    },
  );

  test.each([
    ['', 'empty'],
    ['@', 'the lone @'],
    ['HEAD', 'HEAD'],
    ['-x', 'a leading dash'],
    ['a..b', '..'],
    ['a@{1}', '@{'],
    ['a//b', '//'],
    ['/a', 'a leading slash'],
    ['a/', 'a trailing slash'],
    ['a.', 'a trailing dot'],
    ['.a', 'a component starting with a dot'],
    ['a/.b', 'a component starting with a dot'],
    ['a.lock', 'a component ending in .lock'],
    ['a.lock/b', 'a component ending in .lock'],
    ['a b', 'a space'],
    ['a\tb', 'a control character'],
    ['a\x7fb', 'DEL'],
    ['a~1', '~'],
    ['a^', '^'],
    ['a:b', ':'],
    ['a?', '?'],
    ['a*', '*'],
    ['a[b', '['],
    ['a\\b', 'a backslash'],
    ['a'.repeat(201), 'a component of 201 bytes'],
    ['é'.repeat(101), 'a component of 202 bytes in 101 characters'],
    [Array(52).fill('abcd').join('/'), 'more than 255 characters'],
  ])('%j is refused (%s)', (name) => {
    expect(isValidBranchName(name)).toBe(false);
  });

  test('a component of exactly 200 bytes, and a name of 255 characters, are valid', () => {
    expect(isValidBranchName('é'.repeat(100))).toBe(true);
    const long = `${'a'.repeat(200)}/${'b'.repeat(54)}`;
    expect(long).toHaveLength(255);
    expect(isValidBranchName(long)).toBe(true);
  });

  test('checkBranchName reports the field', () => {
    expect(problemsOf((p) => checkBranchName('a..b', p))).toEqual([{ field: 'defaultBranch', code: 'invalid_format' }]);
    expect(problemsOf((p) => checkBranchName('main', p))).toEqual([]);
  });
});

describe('titles, bodies and descriptions', () => {
  test('a title, when given, is non-empty and at most 256 characters', () => {
    expect(problemsOf((p) => checkTitleAndBody(p, undefined, undefined))).toEqual([]);
    expect(problemsOf((p) => checkTitleAndBody(p, 't'.repeat(256), null))).toEqual([]);
    expect(problemsOf((p) => checkTitleAndBody(p, 't'.repeat(257), null))).toEqual([{ field: 'title', code: 'too_long' }]);
    for (const title of ['', '   ', null])
      expect(problemsOf((p) => checkTitleAndBody(p, title, null))).toEqual([{ field: 'title', code: 'missing' }]);
  });

  test('a body is at most 64 Ki characters; every problem is reported at once', () => {
    expect(problemsOf((p) => checkTitleAndBody(p, 'ok', 'b'.repeat(65_536)))).toEqual([]);
    expect(problemsOf((p) => checkTitleAndBody(p, '', 'b'.repeat(65_537)))).toEqual([
      { field: 'title', code: 'missing' },
      { field: 'body', code: 'too_long' },
    ]);
  });

  test('a description is at most 1000 characters', () => {
    expect(problemsOf((p) => checkDescription('d'.repeat(1000), p))).toEqual([]);
    expect(problemsOf((p) => checkDescription('d'.repeat(1001), p))).toEqual([{ field: 'description', code: 'too_long' }]);
  });

  test('applyTitleAndBody trims the title and notes each value it replaces', () => {
    const record = { title: 'Old', body: 'old body' as string | null };
    const changes: Record<string, unknown> = {};
    applyTitleAndBody(record, { title: '  New  ', body: null }, changes);
    expect(record).toEqual({ title: 'New', body: null });
    expect(changes).toEqual({ title: { from: 'Old' }, body: { from: 'old body' } });
  });

  test('applyTitleAndBody records nothing when nothing changes (a title differing only in spaces, an absent body)', () => {
    const record = { title: 'Same', body: 'b' as string | null };
    const changes: Record<string, unknown> = {};
    applyTitleAndBody(record, { title: ' Same ' }, changes);
    applyTitleAndBody(record, { title: null, body: 'b' }, changes);
    expect(record).toEqual({ title: 'Same', body: 'b' });
    expect(changes).toEqual({});
  });
});
