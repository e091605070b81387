/**
 * Strings that hold only their own text. V8 makes a slice (`split`, `slice`, a regexp's match) of a
 * long string a view that keeps the whole parent alive: a 1 KiB cut of each of 2,000 commit
 * messages read from one `git log` output holds every 16 MiB chunk of that output, some 130 MB
 * (test/git-bounds.test.ts pushes exactly that). What is kept past one git run is made of these.
 */

/** The NUL-separated fields of git's `-z` output, each decoded on its own (no parent string). */
export function nulFields(output: Buffer): string[] {
  const fields: string[] = [];
  let start = 0;
  for (let end = output.indexOf(0); end !== -1; end = output.indexOf(0, start)) {
    fields.push(output.toString('utf8', start, end));
    start = end + 1;
  }
  fields.push(output.toString('utf8', start));
  return fields;
}

/** A copy of `text` that shares no memory with the string it was cut from. */
export function ownCopy(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/**
 * The NUL-terminated records of git's `-z` output (what follows the last NUL, cut short, left out):
 * how many there are, and those from `offset` to `offset + limit`, each decoded on its own. A page of
 * a huge listing holds its own entries, not the whole listing as one string.
 */
export function nulPage(output: Buffer, offset: number, limit: number): { total: number; records: string[] } {
  const ends: number[] = [];
  for (let at = output.indexOf(0); at !== -1; at = output.indexOf(0, at + 1)) ends.push(at);
  const records = ends
    .slice(offset, offset + limit)
    .map((end, i) => output.toString('utf8', offset + i === 0 ? 0 : ends[offset + i - 1]! + 1, end));
  return { total: ends.length, records };
}
