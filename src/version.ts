import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The service's version, from package.json (found upwards from this file, in src/ or dist/src/). */
function readVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'cairn' && pkg.version) return pkg.version;
    } catch {
      /* keep looking */
    }
  }
  return '0.0.0';
}

export const VERSION = readVersion();
