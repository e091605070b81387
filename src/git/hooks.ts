import fs from 'node:fs/promises';
import path from 'node:path';
import { MAX_PUSH_OPTION_BYTES, MAX_PUSH_OPTIONS } from './push-details.js';
import { configureReceive } from './receive-settings.js';
import { ZERO_SHA } from './refs.js';

/** Environment variable naming the file the post-receive hook writes a push's ref updates to. */
export const PUSH_REPORT_ENV = 'CAIRN_PUSH_REPORT';

/** The file beside the report that holds the push's options and certificate. */
export const pushDetailsFile = (report: string) => `${report}.push`;

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
 * Refs one push may update: each becomes events, written in one transaction under the repository's
 * lock (a push of 40,000 refs took minutes to record). A larger push is refused whole; git's
 * client pushes that many refs in parts without trouble (`git push origin 'refs/tags/v1*'`).
 */
const MAX_REFS_PER_PUSH = 5000;

/**
 * `pre-receive`: refuses a whole push of more than MAX_REFS_PER_PUSH refs, or whose options (`git
 * push -o`) are more or longer than its events carry. git bounds each option only by its packet
 * size (64 KiB) and their number not at all.
 */
const PRE_RECEIVE = `#!/bin/sh
# Cairn: refuses pushes of too many refs, or with too many or too long push options (src/git/hooks.ts).
LC_ALL=C
export LC_ALL
refs=$(wc -l)
if [ "$refs" -gt ${MAX_REFS_PER_PUSH} ]; then
  echo "Cairn: refusing the push: it updates $refs refs, at most ${MAX_REFS_PER_PUSH} are accepted in one push (push them in parts)" >&2
  exit 1
fi
count=\${GIT_PUSH_OPTION_COUNT:-0}
if [ "$count" -gt ${MAX_PUSH_OPTIONS} ]; then
  echo "Cairn: refusing the push: it sends $count push options, at most ${MAX_PUSH_OPTIONS} are accepted" >&2
  exit 1
fi
i=0
while [ "$i" -lt "$count" ]; do
  eval "option=\\$GIT_PUSH_OPTION_$i"
  if [ "\${#option}" -gt ${MAX_PUSH_OPTION_BYTES} ]; then
    echo "Cairn: refusing the push: push option $((i + 1)) is longer than ${MAX_PUSH_OPTION_BYTES} bytes" >&2
    exit 1
  fi
  i=$((i + 1))
done
exit 0
`;

/**
 * `post-receive`: git runs it once the refs of a push are updated, with one
 * `<old> <new> <ref>` line per updated ref on stdin: the exact updates of
 * that push, whatever raced around it. It only saves them: first the push's
 * options and certificate (NUL-terminated `name=value` records, see
 * push-details.ts), then the updates, atomically, so the report's appearing
 * says both are complete. The service reads them after receive-pack exits
 * and records the events.
 */
const POST_RECEIVE = `#!/bin/sh
# Cairn: hands what this push did to the service (src/git/receive.ts).
report=$${PUSH_REPORT_ENV}
[ -n "$report" ] || exit 0
{
  i=0
  while [ "$i" -lt "\${GIT_PUSH_OPTION_COUNT:-0}" ]; do
    eval "printf 'option=%s\\\\000' \\"\\$GIT_PUSH_OPTION_$i\\""
    i=$((i + 1))
  done
  if [ -n "$GIT_PUSH_CERT" ]; then
    printf 'cert.%s\\000' "id=$GIT_PUSH_CERT" "status=$GIT_PUSH_CERT_STATUS" "signer=$GIT_PUSH_CERT_SIGNER" \\
      "key=$GIT_PUSH_CERT_KEY" "nonce_status=$GIT_PUSH_CERT_NONCE_STATUS"
  fi
} > "$report.push"
cat > "$report.tmp" && mv "$report.tmp" "$report"
`;

/**
 * Writes Cairn's hooks into a directory of the data dir, shared by every
 * repository through `-c core.hooksPath=...` on each receive-pack run (no
 * per-repository hook files to keep up to date), and sets up what they are
 * handed (receive-settings.ts). Rewritten at every start.
 */
export async function installHooks(dataDir: string, nonceSeed: string): Promise<string> {
  await configureReceive(dataDir, nonceSeed);
  const dir = path.join(dataDir, 'git-hooks');
  await fs.mkdir(dir, { recursive: true });
  for (const [name, script] of [
    ['update', UPDATE],
    ['pre-receive', PRE_RECEIVE],
    ['post-receive', POST_RECEIVE],
  ] as const) {
    const file = path.join(dir, name);
    await fs.writeFile(`${file}.new`, script, { mode: 0o755 });
    await fs.rename(`${file}.new`, file);
  }
  return dir;
}
