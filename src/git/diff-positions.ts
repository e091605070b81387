import { createHash } from 'node:crypto';

/**
 * Where a line sits in a file's unified diff, for comments on lines of a pull request: which hunk
 * holds line L of a side, the `diff_hunk` a comment shows (the hunk's header through its line),
 * ranges of lines, and where a hunk went in another diff of the same file (whether a comment is
 * outdated). Pure: it reads the text git wrote (file-diff.ts runs git).
 *
 * RIGHT is the file after the change (added and context lines), LEFT the file before it (removed
 * and context lines): a context line is on both sides, as on GitHub.
 */
export type DiffSide = 'LEFT' | 'RIGHT';

/** One line of a hunk: its kind, and its number in the old and the new file (null on the side it is not in). */
interface HunkLine {
  kind: ' ' | '+' | '-';
  oldLine: number | null;
  newLine: number | null;
}

export interface Hunk {
  /** The `@@ -a,b +c,d @@ …` line. */
  header: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  /** The hunk's lines as git wrote them, `\ No newline at end of file` markers included. */
  text: string[];
  /** The content lines (markers left out), each with the index of its line in `text`. */
  lines: Array<HunkLine & { at: number }>;
}

const HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/**
 * The hunks of ONE file's diff (`git diff` output; anything before the first `@@` — the `diff --git`
 * and `---`/`+++` lines — is skipped). A hunk ends when it holds the lines its header counts, so a
 * content line that looks like a header can never start one.
 */
export function parseHunks(patch: string): Hunk[] {
  const hunks: Hunk[] = [];
  const rows = patch.split('\n');
  for (let i = 0; i < rows.length; i++) {
    const match = HEADER.exec(rows[i]!);
    if (!match) continue;
    const hunk: Hunk = {
      header: rows[i]!,
      oldStart: Number(match[1]),
      oldLines: match[2] === undefined ? 1 : Number(match[2]),
      newStart: Number(match[3]),
      newLines: match[4] === undefined ? 1 : Number(match[4]),
      text: [],
      lines: [],
    };
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    let oldLeft = hunk.oldLines;
    let newLeft = hunk.newLines;
    while (i + 1 < rows.length && (oldLeft > 0 || newLeft > 0 || rows[i + 1]!.startsWith('\\'))) {
      const row = rows[++i]!;
      const kind = row[0] ?? ' '; // an empty row is an empty context line whose space was lost
      if (kind === '\\') {
        hunk.text.push(row);
        continue;
      }
      if (kind === '+' && newLeft > 0) {
        hunk.lines.push({ kind, oldLine: null, newLine: newLine++, at: hunk.text.length });
        newLeft--;
      } else if (kind === '-' && oldLeft > 0) {
        hunk.lines.push({ kind, oldLine: oldLine++, newLine: null, at: hunk.text.length });
        oldLeft--;
      } else if (kind === ' ' && oldLeft > 0 && newLeft > 0) {
        hunk.lines.push({ kind, oldLine: oldLine++, newLine: newLine++, at: hunk.text.length });
        oldLeft--;
        newLeft--;
      } else {
        i--; // not a line of this hunk: the counts were wrong; stop here
        break;
      }
      hunk.text.push(row);
    }
    hunks.push(hunk);
  }
  return hunks;
}

/** A line's number on `side`, or null when it is not on that side. */
function lineOn(line: HunkLine, side: DiffSide): number | null {
  return side === 'RIGHT' ? line.newLine : line.oldLine;
}

/** Where line `line` of `side` is: its hunk and its index among the hunk's lines; null outside every hunk. */
export function locate(hunks: Hunk[], side: DiffSide, line: number): { hunk: number; index: number } | null {
  for (let h = 0; h < hunks.length; h++) {
    const index = hunks[h]!.lines.findIndex((candidate) => lineOn(candidate, side) === line);
    if (index >= 0) return { hunk: h, index };
  }
  return null;
}

/** A comment's place: its hunk, and the indexes of its first and last line among the hunk's lines. */
export interface Anchor {
  hunk: number;
  index: number;
  startIndex: number;
}

/** A line or range a comment asks for. `startLine` null: one line. */
export interface LineRange {
  line: number;
  side: DiffSide;
  startLine: number | null;
  startSide: DiffSide | null;
}

/** Why a line or range cannot be commented on: a field and a code, as the API reports them. */
export interface RangeProblem {
  field: 'line' | 'startLine';
  code: 'line_not_in_diff' | 'not_same_hunk' | 'start_not_before_line';
  message: string;
}

/**
 * The anchor of a line or a range (GitHub's rules): each end must be a line of its side inside a
 * hunk, both ends in the same hunk, and the start strictly before the end in the hunk's order (a
 * range may start on a removed line, LEFT, and end on an added one, RIGHT).
 */
export function anchorOf(hunks: Hunk[], range: LineRange): Anchor | RangeProblem {
  const end = locate(hunks, range.side, range.line);
  if (!end) {
    return { field: 'line', code: 'line_not_in_diff', message: `line ${range.line} (${range.side}) is not inside a hunk of the diff` };
  }
  if (range.startLine === null) return { hunk: end.hunk, index: end.index, startIndex: end.index };
  const startSide = range.startSide ?? range.side;
  const start = locate(hunks, startSide, range.startLine);
  if (!start) {
    return {
      field: 'startLine',
      code: 'line_not_in_diff',
      message: `start line ${range.startLine} (${startSide}) is not inside a hunk of the diff`,
    };
  }
  if (start.hunk !== end.hunk) return { field: 'startLine', code: 'not_same_hunk', message: 'a range must lie within one hunk' };
  if (start.index >= end.index) return { field: 'startLine', code: 'start_not_before_line', message: 'start line must come before line' };
  return { hunk: end.hunk, index: end.index, startIndex: start.index };
}

/** What a `diff_hunk` keeps at most: the lines before the commented line, and characters in all. */
const DIFF_HUNK_LINES = 20;
const DIFF_HUNK_CHARS = 8 * 1024;

/**
 * `diff_hunk`: the hunk's header through the commented line (and its `\ No newline` marker, which
 * belongs to it) — of a long hunk, the header and the DIFF_HUNK_LINES lines that end at the commented
 * one, and of those at most DIFF_HUNK_CHARS characters, the last: a comment on line 500,000 of a
 * one-hunk file stores and answers a few lines, not megabytes.
 */
export function diffHunkText(hunk: Hunk, index: number): string {
  let through = hunk.lines[index]!.at;
  if (hunk.text[through + 1]?.startsWith('\\')) through++;
  const lines = hunk.text.slice(Math.max(0, through + 1 - DIFF_HUNK_LINES), through + 1).join('\n');
  return `${hunk.header}\n${lines.length > DIFF_HUNK_CHARS ? lines.slice(-DIFF_HUNK_CHARS) : lines}`;
}

/**
 * What stays the same of a hunk when other changes to the file move it: its lines (kinds and text),
 * without the header's line numbers. Two diffs of a file hold the same hunk when the digests match.
 */
export function hunkDigest(hunk: Hunk): string {
  return createHash('sha256').update(hunk.text.join('\n')).digest('hex');
}

/** A comment's place in another diff of its file: the lines its ends are now. */
export interface Relocated {
  line: number;
  startLine: number | null;
  hunk: Hunk;
}

/** A file's hunks by digest, each hunk hashed once: what `relocate` looks in. */
export type HunksByDigest = ReadonlyMap<string, Hunk[]>;

/** The hunks of one diff of a file, grouped by digest (each hashed once, whatever the number of comments looked for). */
export function hunksByDigest(hunks: Hunk[]): HunksByDigest {
  const byDigest = new Map<string, Hunk[]>();
  for (const hunk of hunks) {
    const digest = hunkDigest(hunk);
    byDigest.set(digest, [...(byDigest.get(digest) ?? []), hunk]);
  }
  return byDigest;
}

/**
 * Where a comment anchored in a hunk with `digest` is in another diff of the same file: in the hunk
 * with the same digest (of several, the one nearest `near`, its last known line), at the same
 * indexes. null when no hunk is the same any more: the comment is outdated.
 */
export function relocate(
  hunks: HunksByDigest,
  anchor: { digest: string; index: number; startIndex: number; side: DiffSide; startSide: DiffSide | null; near: number },
): Relocated | null {
  let best: Relocated | null = null;
  for (const hunk of hunks.get(anchor.digest) ?? []) {
    const end = hunk.lines[anchor.index];
    const line = end ? lineOn(end, anchor.side) : null;
    if (line === null) continue;
    const start = anchor.startSide === null ? null : hunk.lines[anchor.startIndex];
    const startLine = start ? lineOn(start, anchor.startSide!) : null;
    if (best === null || Math.abs(line - anchor.near) < Math.abs(best.line - anchor.near)) best = { line, startLine, hunk };
  }
  return best;
}
