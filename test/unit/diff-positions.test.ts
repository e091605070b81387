import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  anchorOf,
  diffHunkText,
  hunkDigest,
  hunksByDigest,
  locate,
  parseHunks,
  relocate,
  type Hunk,
} from '../../src/git/diff-positions.js';

/**
 * The position math of comments on lines, against what `git diff` really writes: a temporary
 * repository, commits made in it, and the diff of one file (the way the service diffs a pull
 * request's file, -U3, renames found).
 */
let dir: string;
const git = (...args: string[]) =>
  execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1', LANG: 'C', LC_ALL: 'C' },
  });

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-diff-positions-'));
  git('init', '--quiet', '--initial-branch=main');
  git('config', 'user.name', 'T');
  git('config', 'user.email', 't@example.test');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const numbered = (count: number, prefix = 'line') => Array.from({ length: count }, (_, i) => `${prefix} ${i + 1}`);

/** Writes files (null deletes), commits, returns the sha. */
function commit(files: Record<string, string | Buffer | null>): string {
  for (const [file, content] of Object.entries(files)) {
    if (content === null) fs.rmSync(path.join(dir, file));
    else fs.writeFileSync(path.join(dir, file), content);
  }
  git('add', '-A');
  git('commit', '--quiet', '--allow-empty', '-m', 'c');
  return git('rev-parse', 'HEAD').trim();
}

/** The hunks of `file` in `from..to` as the service reads them. */
function hunksOf(from: string, to: string, file: string): { hunks: Hunk[]; raw: string } {
  const raw = git('diff', '--no-color', '-U3', '-M', from, to, '--', file);
  return { hunks: parseHunks(raw), raw };
}

test('an added file: every line is RIGHT, nothing is LEFT', () => {
  const base = commit({ 'keep.txt': 'x\n' });
  const head = commit({ 'new.txt': numbered(5).join('\n') + '\n' });
  const { hunks } = hunksOf(base, head, 'new.txt');
  expect(hunks).toHaveLength(1);
  expect(hunks[0]).toMatchObject({ oldStart: 0, oldLines: 0, newStart: 1, newLines: 5 });
  expect(locate(hunks, 'RIGHT', 1)).toEqual({ hunk: 0, index: 0 });
  expect(locate(hunks, 'RIGHT', 5)).toEqual({ hunk: 0, index: 4 });
  expect(locate(hunks, 'RIGHT', 6)).toBeNull();
  expect(locate(hunks, 'LEFT', 1)).toBeNull();
  expect(diffHunkText(hunks[0]!, 2)).toBe('@@ -0,0 +1,5 @@\n+line 1\n+line 2\n+line 3');
});

test('a modification: changed lines and the context around them, on their sides', () => {
  const base = commit({ 'mod.txt': numbered(20).join('\n') + '\n' });
  const lines = numbered(20);
  lines[9] = 'line 10 changed';
  const head = commit({ 'mod.txt': lines.join('\n') + '\n' });
  const { hunks } = hunksOf(base, head, 'mod.txt');
  expect(hunks).toHaveLength(1);
  expect(hunks[0]).toMatchObject({ oldStart: 7, oldLines: 7, newStart: 7, newLines: 7 });
  // Context lines 7-9 and 11-13 count on both sides; 10 is removed (LEFT) and added (RIGHT).
  for (const line of [7, 9, 10, 11, 13]) expect(locate(hunks, 'RIGHT', line)).not.toBeNull();
  for (const line of [7, 10, 13]) expect(locate(hunks, 'LEFT', line)).not.toBeNull();
  expect(locate(hunks, 'RIGHT', 6)).toBeNull();
  expect(locate(hunks, 'RIGHT', 14)).toBeNull();
  expect(locate(hunks, 'LEFT', 10)).toEqual({ hunk: 0, index: 3 });
  expect(locate(hunks, 'RIGHT', 10)).toEqual({ hunk: 0, index: 4 });
  expect(diffHunkText(hunks[0]!, 4)).toBe('@@ -7,7 +7,7 @@ line 6\n line 7\n line 8\n line 9\n-line 10\n+line 10 changed');
  const anchor = anchorOf(hunks, { side: 'RIGHT', line: 3, startLine: null, startSide: null });
  expect(anchor).toMatchObject({ field: 'line', code: 'line_not_in_diff' });
});

test('a deletion: its lines are LEFT only', () => {
  const base = commit({ 'gone.txt': numbered(4).join('\n') + '\n' });
  const head = commit({ 'gone.txt': null });
  const { hunks } = hunksOf(base, head, 'gone.txt');
  expect(hunks[0]).toMatchObject({ oldStart: 1, oldLines: 4, newStart: 0, newLines: 0 });
  expect(locate(hunks, 'LEFT', 4)).toEqual({ hunk: 0, index: 3 });
  expect(locate(hunks, 'RIGHT', 1)).toBeNull();
});

test('several hunks: a line between them is outside the diff', () => {
  const lines = numbered(40);
  const base = commit({ 'two.txt': lines.join('\n') + '\n' });
  const changed = [...lines];
  changed[2] = 'three';
  changed[35] = 'thirty-six';
  const head = commit({ 'two.txt': changed.join('\n') + '\n' });
  const { hunks } = hunksOf(base, head, 'two.txt');
  expect(hunks).toHaveLength(2);
  expect(locate(hunks, 'RIGHT', 20)).toBeNull();
  expect(locate(hunks, 'RIGHT', 36)).toEqual({ hunk: 1, index: 4 });
  expect(anchorOf(hunks, { side: 'RIGHT', line: 36, startLine: 3, startSide: 'RIGHT' })).toMatchObject({ code: 'not_same_hunk' });
});

test('a rename keeps its content hunks under the new path', () => {
  const lines = numbered(30);
  const base = commit({ 'old-name.txt': lines.join('\n') + '\n' });
  const changed = [...lines];
  changed[14] = 'fifteen';
  fs.rmSync(path.join(dir, 'old-name.txt'));
  const head = commit({ 'new-name.txt': changed.join('\n') + '\n' });
  const raw = git('diff', '--no-color', '-U3', '-M', base, head);
  expect(raw).toContain('rename to new-name.txt');
  const hunks = parseHunks(raw);
  expect(hunks).toHaveLength(1);
  expect(locate(hunks, 'RIGHT', 15)).toEqual({ hunk: 0, index: 4 });
  expect(locate(hunks, 'LEFT', 15)).toEqual({ hunk: 0, index: 3 });
});

test('a binary file has no lines', () => {
  const base = commit({ 'image.bin': Buffer.from([0, 1, 2, 3, 0, 5]) });
  const head = commit({ 'image.bin': Buffer.from([0, 1, 9, 3, 0, 5, 6]) });
  const { hunks, raw } = hunksOf(base, head, 'image.bin');
  expect(raw).toMatch(/^Binary files /m);
  expect(hunks).toEqual([]);
  expect(anchorOf(hunks, { side: 'RIGHT', line: 1, startLine: null, startSide: null })).toMatchObject({ code: 'line_not_in_diff' });
});

test('the last line without a newline: "\\ No newline at end of file" is no line of either side', () => {
  const base = commit({ 'eof.txt': 'a\nb\nc' });
  const head = commit({ 'eof.txt': 'a\nb\nc\nd' });
  const { hunks, raw } = hunksOf(base, head, 'eof.txt');
  expect(raw).toContain('\\ No newline at end of file');
  expect(hunks).toHaveLength(1);
  const hunk = hunks[0]!;
  expect(hunk.lines.map((line) => line.kind)).toEqual([' ', ' ', '-', '+', '+']);
  expect(locate(hunks, 'RIGHT', 4)).toEqual({ hunk: 0, index: 4 });
  expect(locate(hunks, 'RIGHT', 5)).toBeNull();
  expect(locate(hunks, 'LEFT', 3)).toEqual({ hunk: 0, index: 2 });
  // The marker belongs to the line before it: the diff_hunk of the last line ends with it.
  expect(diffHunkText(hunk, 4).split('\n').slice(-2)).toEqual(['+d', '\\ No newline at end of file']);
  expect(diffHunkText(hunk, 2).split('\n').slice(-2)).toEqual(['-c', '\\ No newline at end of file']);
});

test('ranges: within one hunk, start before end, across sides as GitHub allows', () => {
  const lines = numbered(12);
  const base = commit({ 'range.txt': lines.join('\n') + '\n' });
  const changed = [...lines];
  changed.splice(5, 2, 'six', 'seven', 'seven and a half');
  const head = commit({ 'range.txt': changed.join('\n') + '\n' });
  const { hunks } = hunksOf(base, head, 'range.txt');
  expect(hunks).toHaveLength(1);
  // RIGHT 4..8: context, then added lines.
  expect(anchorOf(hunks, { side: 'RIGHT', line: 8, startLine: 4, startSide: null })).toEqual({ hunk: 0, index: 7, startIndex: 1 });
  // A removed line (LEFT 6) through an added one (RIGHT 7).
  expect(anchorOf(hunks, { side: 'RIGHT', line: 7, startLine: 6, startSide: 'LEFT' })).toMatchObject({ hunk: 0, startIndex: 3 });
  // Backwards, or one line as a range: refused.
  expect(anchorOf(hunks, { side: 'RIGHT', line: 4, startLine: 8, startSide: null })).toMatchObject({ code: 'start_not_before_line' });
  expect(anchorOf(hunks, { side: 'RIGHT', line: 4, startLine: 4, startSide: null })).toMatchObject({ code: 'start_not_before_line' });
  expect(anchorOf(hunks, { side: 'RIGHT', line: 8, startLine: 1, startSide: null })).toMatchObject({
    field: 'startLine',
    code: 'line_not_in_diff',
  });
});

test('relocate: a hunk moved by a change elsewhere keeps its comment; a changed hunk outdates it', () => {
  const lines = numbered(60);
  const base = commit({ 'move.txt': lines.join('\n') + '\n' });
  const first = [...lines];
  first[39] = 'forty';
  const head1 = commit({ 'move.txt': first.join('\n') + '\n' });
  const before = hunksOf(base, head1, 'move.txt').hunks;
  const at = locate(before, 'RIGHT', 40)!;
  const anchor = {
    digest: hunkDigest(before[at.hunk]!),
    index: at.index,
    startIndex: at.index,
    side: 'RIGHT' as const,
    startSide: null,
    near: 40,
  };

  // Two lines added near the top: a new hunk there, ours moves down by two, unchanged.
  const second = ['top a', 'top b', ...first];
  const head2 = commit({ 'move.txt': second.join('\n') + '\n' });
  const moved = hunksOf(base, head2, 'move.txt').hunks;
  expect(moved).toHaveLength(2);
  expect(relocate(hunksByDigest(moved), anchor)).toMatchObject({ line: 42, startLine: null });

  // The commented hunk changed (a line next to it): outdated.
  const third = [...second];
  third[42] = 'forty-one changed';
  const head3 = commit({ 'move.txt': third.join('\n') + '\n' });
  expect(relocate(hunksByDigest(hunksOf(base, head3, 'move.txt').hunks), anchor)).toBeNull();
});

test('hunksByDigest: hunks hashed once and grouped; of two identical hunks relocate takes the nearest', () => {
  const block = (tag: string) => ['a', 'b', 'c', tag, 'd', 'e', 'f'];
  const filler = (from: number) => numbered(10, `filler ${from}`);
  const lines = [...block('X'), ...filler(1), ...block('X'), ...filler(2)];
  const base = commit({ 'twice.txt': lines.join('\n') + '\n' });
  const changed = [...block('Y'), ...filler(1), ...block('Y'), ...filler(2)];
  const head = commit({ 'twice.txt': changed.join('\n') + '\n' });
  const { hunks } = hunksOf(base, head, 'twice.txt');
  expect(hunks).toHaveLength(2);
  const byDigest = hunksByDigest(hunks);
  expect([...byDigest.values()].map((group) => group.length)).toEqual([2]);
  const at = locate(hunks, 'RIGHT', 4)!;
  const anchor = { digest: hunkDigest(hunks[0]!), index: at.index, startIndex: at.index, side: 'RIGHT' as const, startSide: null };
  expect(relocate(byDigest, { ...anchor, near: 3 })).toMatchObject({ line: 4 });
  expect(relocate(byDigest, { ...anchor, near: 20 })).toMatchObject({ line: 21 });
});

test('the diff_hunk of a line deep in a long hunk is the header and the 20 lines ending at it, at most 8 KiB', () => {
  const added = Array.from({ length: 1000 }, (_, i) => `+line ${i + 1}`);
  const [hunk] = parseHunks(['@@ -0,0 +1,1000 @@', ...added].join('\n'));
  const at = locate([hunk!], 'RIGHT', 900)!;
  expect(diffHunkText(hunk!, at.index)).toBe(['@@ -0,0 +1,1000 @@', ...added.slice(880, 900)].join('\n'));
  const [wide] = parseHunks(['@@ -0,0 +1,3 @@', `+${'w'.repeat(10_000)}`, '+a', '+b'].join('\n'));
  const text = diffHunkText(wide!, locate([wide!], 'RIGHT', 3)!.index);
  expect(text.startsWith('@@ -0,0 +1,3 @@\n')).toBe(true);
  expect(text.length).toBe('@@ -0,0 +1,3 @@\n'.length + 8 * 1024);
  expect(text.endsWith('\n+a\n+b')).toBe(true);
});
