import fs from 'node:fs/promises';
import path from 'node:path';

/** Environment variable naming the file the post-receive hook writes a push's ref updates to. */
export const PUSH_REPORT_ENV = 'CAIRN_PUSH_REPORT';

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
 * `pre-receive`: refuses the whole push when it would create a branch or tag
 * whose name git accepts as a ref but not as a name on a command line
 * (`refs/heads/-x` reads as an option, `refs/heads/HEAD` shadows HEAD), as
 * GitHub does. Deleting such a ref stays possible.
 */
const PRE_RECEIVE = `#!/bin/sh
# Cairn: refuses branch and tag names that cannot be used as names (src/git/hooks.ts).
status=0
while read -r old new ref; do
  [ "$new" = "0000000000000000000000000000000000000000" ] && continue
  case "$ref" in
    refs/heads/-*|refs/tags/-*|refs/heads/HEAD|refs/tags/HEAD)
      echo "Cairn: refusing $ref: a branch or tag name may not start with '-' or be HEAD" >&2
      status=1
      ;;
  esac
done
exit $status
`;

/**
 * Writes Cairn's hooks into a directory of the data dir, shared by every
 * repository through `-c core.hooksPath=...` on each receive-pack run (no
 * per-repository hook files to keep up to date). Rewritten at every start.
 */
export async function installHooks(dataDir: string): Promise<string> {
  const dir = path.join(dataDir, 'git-hooks');
  await fs.mkdir(dir, { recursive: true });
  for (const [name, script] of [
    ['pre-receive', PRE_RECEIVE],
    ['post-receive', POST_RECEIVE],
  ] as const) {
    const file = path.join(dir, name);
    await fs.writeFile(`${file}.new`, script, { mode: 0o755 });
    await fs.rename(`${file}.new`, file);
  }
  return dir;
}
