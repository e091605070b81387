import fs from 'node:fs/promises';
import path from 'node:path';
import { Refusal } from './refusal.js';

/**
 * `<backup>/manifest.json`: what a backup holds, written last, so a backup without one is not whole
 * (an interrupted run) and is refused by the restore. The version changes when the layout does.
 */
const FORMAT = 'cairn-backup';
const FORMAT_VERSION = 1;
const MANIFEST_FILE = 'manifest.json';

/** Where the parts of a backup live inside its directory. */
export const DATABASE_DIR = 'database';
export const REPOSITORIES_DIR = 'repositories';

export interface TableEntry {
  name: string;
  /** The columns dumped, in the order of the file's fields (generated columns are left out: PostgreSQL computes them). */
  columns: string[];
  rows: number;
}

/** A table's rows in a backup: `COPY … TO STDOUT`'s text format, one line a row. */
export function tableFile(backupDir: string, table: string): string {
  return path.join(backupDir, DATABASE_DIR, `${table}.copy`);
}

/** A sequence feeding a column (`bigserial`): restored past the column's largest value and this value. */
export interface SequenceEntry {
  name: string;
  table: string;
  column: string;
  /** As a string: a bigint may not fit a JavaScript number. */
  lastValue: string;
}

interface RepositoryEntry {
  id: string;
  defaultBranch: string;
  /** The refs `git_refs` recorded for it in the snapshot: the copy has exactly these. */
  refs: number;
}

export interface Manifest {
  format: typeof FORMAT;
  version: typeof FORMAT_VERSION;
  createdAt: string;
  /** The Cairn that made it. */
  cairnVersion: string;
  /** The migrations the database had executed, in order: the restore brings its schema to the last one. */
  migrations: string[];
  tables: TableEntry[];
  sequences: SequenceEntry[];
  repositories: RepositoryEntry[];
  /**
   * Where the key of the site's webhook secrets is: in the backup (generated into the database), or
   * CAIRN_SECRET_KEY, which the backup does not hold and the restored site must be started with.
   */
  secretKey: 'in-backup' | 'CAIRN_SECRET_KEY';
}

/** Everything but the fields that say what the file is. */
export type ManifestContent = Omit<Manifest, 'format' | 'version'>;

export async function writeManifest(dir: string, content: ManifestContent): Promise<void> {
  const manifest: Manifest = { format: FORMAT, version: FORMAT_VERSION, ...content };
  await fs.writeFile(path.join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
}

/** The manifest of a backup directory; a Refusal naming what is wrong when it is not a whole Cairn backup. */
export async function readManifest(dir: string): Promise<Manifest> {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    throw new Refusal(`${dir} is not a Cairn backup: it has no ${MANIFEST_FILE} (a backup that did not finish has none either)`);
  }
  let manifest: Partial<Manifest>;
  try {
    manifest = JSON.parse(text) as Partial<Manifest>;
  } catch {
    throw new Refusal(`${dir} is not a Cairn backup: ${MANIFEST_FILE} is not JSON`);
  }
  if (manifest?.format !== FORMAT) throw new Refusal(`${dir} is not a Cairn backup: ${MANIFEST_FILE} is not a Cairn backup's manifest`);
  if (manifest.version !== FORMAT_VERSION) {
    throw new Refusal(`${dir} is a Cairn backup of format ${String(manifest.version)}; this Cairn reads format ${FORMAT_VERSION}`);
  }
  if (!isWhole(manifest)) throw new Refusal(`${dir} is not a Cairn backup: ${MANIFEST_FILE} lacks some of its fields`);
  return manifest;
}

function isWhole(manifest: Partial<Manifest>): manifest is Manifest {
  const strings = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string');
  return (
    strings(manifest.migrations) &&
    manifest.migrations!.length > 0 &&
    Array.isArray(manifest.tables) &&
    manifest.tables.every((t) => /^[a-z_][a-z0-9_]*$/.test(String(t?.name)) && strings(t.columns) && Number.isInteger(t.rows)) &&
    Array.isArray(manifest.sequences) &&
    manifest.sequences.every(
      (s) =>
        typeof s?.name === 'string' && typeof s.table === 'string' && typeof s.column === 'string' && /^\d+$/.test(String(s.lastValue)),
    ) &&
    Array.isArray(manifest.repositories) &&
    manifest.repositories.every((r) => /^repo_[0-9a-z]+$/.test(String(r?.id)) && typeof r.defaultBranch === 'string') &&
    (manifest.secretKey === 'in-backup' || manifest.secretKey === 'CAIRN_SECRET_KEY')
  );
}
