import fs from 'node:fs/promises';
import path from 'node:path';
import { ZERO_SHA } from './refs.js';

/** Environment variable naming the file the post-receive hook writes a push's ref updates to. */
export const PUSH_REPORT_ENV = 'CAIRN_PUSH_REPORT';

/**
 * `update`: git runs it once per ref of a push, before moving that ref; refusing refuses that ref
 * only, so a push lands its other refs (as on GitHub), unless the client asked for `--atomic`.
 * - A push writes branches and tags only (`refs/heads/*`, `refs/tags/*`): nothing else is served
 *   as part of a repository, and other namespaces change how git reads it (`refs/replace/*`).
 *   Deleting a ref outside them stays possible: only a ref left from before this rule can be there.
 * - A new branch or tag may not be named so that git accepts it as a ref but not as a name on a
 *   command line (`refs/heads/-x` reads as an option, `refs/heads/HEAD` shadows HEAD), as on GitHub.
 * Its output reaches the pusher (`remote: ...`), and git prints the ref as `[remote rejected]`.
 */
const UPDATE = `#!/bin/sh
# Cairn: refuses, one ref at a time, what a push may not write (src/git/hooks.ts).
ref=$1
new=$3
refuse() {
  printf 'Cairn: refusing %s: %s\\n' "$ref" "$1" >&2
  exit 1
}
[ "$new" = "${ZERO_SHA}" ] && exit 0
case "$ref" in
  refs/heads/-*|refs/tags/-*|refs/heads/HEAD|refs/tags/HEAD)
    refuse "a branch or tag name may not start with '-' or be HEAD" ;;
  refs/heads/*|refs/tags/*) exit 0 ;;
  *) refuse 'a push may only write branches (refs/heads/) and tags (refs/tags/)' ;;
esac
`;

/**
 * `post-receive`: git runs it once the refs of a push are updated, with one
 * `<old> <new> <ref>` line per updated ref on stdin: the exact updates of
 * that push, whatever raced around it. It only saves them (atomically, so a
 * half-written report never exists); the service reads the file after
 * receive-pack exits and records the events.
 */
const POST_RECEIVE = `#!/bin/sh
# Cairn: hands the ref updates of this push to the service (src/git/receive.ts).
[ -n "$${PUSH_REPORT_ENV}" ] || exit 0
cat > "$${PUSH_REPORT_ENV}.tmp" && mv "$${PUSH_REPORT_ENV}.tmp" "$${PUSH_REPORT_ENV}"
`;

/**
 * Writes Cairn's hooks into a directory of the data dir, shared by every
 * repository through `-c core.hooksPath=...` on each receive-pack run (no
 * per-repository hook files to keep up to date). Rewritten at every start.
 */
export async function installHooks(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, 'git-hooks');
  await fs.mkdir(dir, { recursive: true });
  // Refusals were made here for the whole push before `update` made them per ref.
  await fs.rm(path.join(dir, 'pre-receive'), { force: true });
  for (const [name, script] of [
    ['update', UPDATE],
    ['post-receive', POST_RECEIVE],
  ] as const) {
    const file = path.join(dir, name);
    await fs.writeFile(`${file}.new`, script, { mode: 0o755 });
    await fs.rename(`${file}.new`, file);
  }
  return dir;
}
