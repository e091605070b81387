/** Plain-text output for the CLI: aligned columns, no colours, so it reads the same in a terminal, a pipe or a log. */

export type Column<T> = [header: string, value: (row: T) => string | number | boolean | null | undefined];

/** `-` for an absent value, so every column keeps a cell and `awk`/`cut` still count fields. */
function cell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value);
}

/** An ISO time to the second, in UTC: `2026-11-23T18:19:18Z`. */
export function time(iso: string | null | undefined): string | null {
  return iso ? iso.replace(/\.\d+Z$/, 'Z') : null;
}

/** The rows as a table with a header line, each column as wide as its widest cell. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const lines = [columns.map(([header]) => header), ...rows.map((row) => columns.map(([, value]) => cell(value(row))))];
  const widths = columns.map((_, i) => Math.max(...lines.map((line) => line[i]!.length)));
  return lines.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join('  ')).join('\n');
}
