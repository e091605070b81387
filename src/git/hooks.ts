import fs from 'node:fs/promises';
import path from 'node:path';
import { MAX_PUSH_OPTION_BYTES, MAX_PUSH_OPTIONS } from './refs/push-details.js';
import { configureReceive } from './receive-settings.js';
import { ZERO_SHA } from '../ids.js';

/** Environment variable naming the file the post-receive hook writes a push's ref updates to. */
export const PUSH_REPORT_ENV = 'CAIRN_PUSH_REPORT';

/**
 * Environment variable naming the file the pre-receive hook writes a push's options and certificate
 * to before any ref moves: in the repository's own directory, which every process reads, so that
 * whichever process records a push its process died in has them (the journal names the file).
 */
export const PUSH_DETAILS_ENV = 'CAIRN_PUSH_DETAILS';

/** Environment variable naming the repository-lock holding (its lease token) a ref change is made under. */
const LOCK_TOKEN_ENV = 'CAIRN_LOCK_TOKEN';

/**
 * Environment variable set while a policy (ref-transaction.ts RefPolicy) wants each ref update of a
 * push put to it: `<port> <token>` of the loopback socket the service listens on for this push only.
 */
export const REF_GUARD_ENV = 'CAIRN_REF_GUARD';

/** The script the `update` hook runs to put a branch update to the policy (REF_GUARD below). */
const REF_GUARD_SCRIPT = 'cairn-ref-guard';

/** The file in a repository's directory listing the lock holdings taken away from their holders, one token a line. */
export const REVOKED_LOCKS_FILE = 'cairn-revoked-locks';

/**
 * The directory, inside the hooks directory, of the one hook a git command other than receive-pack
 * runs under a repository's lock: `reference-transaction`. receive-pack runs the hooks directory
 * itself, where the fence is in the `update` hook instead (see UPDATE).
 */
const FENCE_DIR = 'fence';

/**
 * What a git command that moves refs under a repository's lock runs with, so its changes are
 * fenced: receive-pack, Cairn's push hooks (the `update` hook fencing each ref); any other
 * (update-ref), the fence directory's `reference-transaction` hook.
 */
export function fencedBy(
  hooksDir: string,
  token: string,
  command: 'receive-pack' | 'update-ref',
): { config: string[]; env: Record<string, string> } {
  const dir = command === 'receive-pack' ? hooksDir : path.join(hooksDir, FENCE_DIR);
  return { config: [`core.hooksPath=${dir}`], env: { [LOCK_TOKEN_ENV]: token } };
}

/**
 * The fence, in shell: refuses (`refuse`, which the hook defines) a ref change made under a
 * repository lock whose lease was taken away from its holder (a process paused or cut off past the
 * lease, see repository-lock.ts), so a holder that wakes up cannot move refs under another's lock.
 * Changes made without a lock token (maintenance) pass.
 */
const FENCE_CHECK = `token=$${LOCK_TOKEN_ENV}
revoked="\${GIT_DIR:-.}/${REVOKED_LOCKS_FILE}"
if [ -n "$token" ] && [ -f "$revoked" ] && grep -qxF "$token" "$revoked"; then
  refuse "this change's hold on the repository ran out and was taken over"
fi`;

/**
 * `update`: git runs it once per ref of a push, before moving that ref; refusing refuses that ref
 * only, so a push lands its other refs (as on GitHub), unless the client asked for `--atomic`.
 * - The fence (FENCE_CHECK) comes first. It is here rather than in a `reference-transaction` hook,
 *   which git runs twice for every ref of a push (prepared, committed), each a process: 4,500
 *   processes for a push of 1,500 tags, 25 s on a machine where starting one takes 5 ms. receive-pack
 *   runs this hook for each ref just before that ref's transaction (for `--atomic`, the last one
 *   just before the one transaction), so the check is as late as one process per ref allows.
 * - A push writes branches and tags only (`refs/heads/*`, `refs/tags/*`): nothing else is served
 *   as part of a repository, and other namespaces change how git reads it (`refs/replace/*`).
 *   Deleting a ref outside them stays possible (only a ref left from before this rule can be there),
 *   but for the service's pull refs (receive-pack hides them too: receive.ts).
 * - A new branch or tag may not be named so that git accepts it as a ref but not as a name on a
 *   command line (`refs/heads/-x` reads as an option, `refs/heads/HEAD` shadows HEAD), as on GitHub.
 * - With a policy listening (REF_GUARD_ENV), a branch update is then put to it (REF_GUARD below).
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
${FENCE_CHECK}
guarded() {
  [ -n "$${REF_GUARD_ENV}" ] || exit 0
  exec bash "$(dirname "$0")/${REF_GUARD_SCRIPT}" "$ref" "$2" "$new"
}
if [ "$new" = "${ZERO_SHA}" ]; then
  case "$ref" in
    refs/heads/*) guarded "$@" ;;
    refs/pull/*) refuse 'pull request refs are kept by the service' ;;
  esac
  exit 0
fi
case "$ref" in
  refs/heads/-*|refs/tags/-*|refs/heads/HEAD|refs/tags/HEAD)
    refuse "a branch or tag name may not start with '-' or be HEAD" ;;
  refs/heads/*) guarded "$@" ;;
  refs/tags/*) exit 0 ;;
  *) refuse 'a push may only write branches (refs/heads/) and tags (refs/tags/)' ;;
esac
`;

/**
 * Puts one branch update to the guard over the loopback socket named by REF_GUARD_ENV (bash: its
 * /dev/tcp needs no other program). The service answers `ok`, `refuse <reason>`, or first `need
 * <facts>` — what only git can tell about the update while its objects are still in the push's
 * quarantine, which this hook sees and the service does not: whether the update rewrites history
 * (`forced`) and whether it brings merge commits (`merges`). No answer refuses the ref: a guard
 * that cannot be asked never lets a protected branch move.
 */
const REF_GUARD = `#!/bin/bash
# Cairn: asks the service whether a branch may move (src/git/hooks.ts).
ref=$1 old=$2 new=$3
refuse() {
  printf 'Cairn: refusing %s: %s\n' "$ref" "$1" >&2
  exit 1
}
read -r port token <<< "$${REF_GUARD_ENV}"
{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || refuse 'the service could not be asked about this branch'
printf '%s %s %s %s\n' "$token" "$ref" "$old" "$new" >&3
IFS= read -r answer <&3
if [ "\${answer%% *}" = need ]; then
  facts=
  for fact in \${answer#need }; do
    case "$fact" in
      forced) git merge-base --is-ancestor "$old" "$new" 2>/dev/null && facts="$facts forced=0" || facts="$facts forced=1" ;;
      # A rev-list that fails (a bound, a missing object) says merges=1: the rule fails closed.
      merges) found=$(git rev-list --merges -n 1 "$old..$new" 2>/dev/null) && [ -z "$found" ] && facts="$facts merges=0" || facts="$facts merges=1" ;;
    esac
  done
  printf 'facts%s\n' "$facts" >&3
  IFS= read -r answer <&3
fi
case "$answer" in
  ok) exit 0 ;;
  'refuse '*) refuse "\${answer#refuse }" ;;
  *) refuse 'the service gave no answer about this branch' ;;
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
 * size (64 KiB) and their number not at all. A push it lets through has its options and certificate
 * written (NUL-terminated `name=value` records, see push-details.ts) before git moves any ref.
 */
const PRE_RECEIVE = `#!/bin/sh
# Cairn: refuses pushes of too many refs, or with too many or too long push options, and saves
# what an accepted push says beside its refs (src/git/hooks.ts).
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
details=$${PUSH_DETAILS_ENV}
[ -n "$details" ] || exit 0
{
  i=0
  while [ "$i" -lt "$count" ]; do
    eval "printf 'option=%s\\\\000' \\"\\$GIT_PUSH_OPTION_$i\\""
    i=$((i + 1))
  done
  if [ -n "$GIT_PUSH_CERT" ]; then
    printf 'cert.%s\\000' "id=$GIT_PUSH_CERT" "status=$GIT_PUSH_CERT_STATUS" "signer=$GIT_PUSH_CERT_SIGNER" \\
      "key=$GIT_PUSH_CERT_KEY" "nonce_status=$GIT_PUSH_CERT_NONCE_STATUS"
  fi
} > "$details.tmp" && mv "$details.tmp" "$details"
`;

/**
 * `post-receive`: git runs it once the refs of a push are updated, with one
 * `<old> <new> <ref>` line per updated ref on stdin: the exact updates of
 * that push, whatever raced around it. It only saves them, atomically, so
 * the report's appearing says it is complete. The service reads it after
 * receive-pack exits and records the events.
 */
const POST_RECEIVE = `#!/bin/sh
# Cairn: hands what this push did to the service (src/git/http/receive.ts).
report=$${PUSH_REPORT_ENV}
[ -n "$report" ] || exit 0
cat > "$report.tmp" && mv "$report.tmp" "$report"
`;

/**
 * `reference-transaction`, in the fence directory (FENCE_DIR): git runs it for every ref
 * transaction, `prepared` once the refs are locked and before any is written, where the fence
 * (FENCE_CHECK) refuses the whole transaction. The service's own ref changes (`update-ref --stdin`,
 * one transaction each) run with it.
 */
const REFERENCE_TRANSACTION = `#!/bin/sh
# Cairn: refuses ref changes made under a repository lock taken from its holder (src/git/hooks.ts).
# The refs on stdin are not read: git ignores the hook's closing it (EPIPE).
[ "$1" = prepared ] || exit 0
refuse() {
  echo "Cairn: refusing to move refs: $1" >&2
  exit 1
}
${FENCE_CHECK}
exit 0
`;

/**
 * Writes Cairn's hooks into a directory of the data dir, shared by every
 * repository through `-c core.hooksPath=...` on each receive-pack run (no
 * per-repository hook files to keep up to date), the fence of the service's
 * own ref changes in a directory of its own inside it (FENCE_DIR), and sets up
 * what they are handed (receive-settings.ts). Rewritten at every start.
 */
export async function installHooks(dataDir: string, nonceSeed: string): Promise<string> {
  await configureReceive(dataDir, nonceSeed);
  const dir = path.join(dataDir, 'git-hooks');
  await fs.mkdir(path.join(dir, FENCE_DIR), { recursive: true });
  // Earlier versions fenced pushes with a reference-transaction hook here: receive-pack must not run it.
  await fs.rm(path.join(dir, 'reference-transaction'), { force: true });
  for (const [name, script] of [
    ['update', UPDATE],
    ['pre-receive', PRE_RECEIVE],
    ['post-receive', POST_RECEIVE],
    [REF_GUARD_SCRIPT, REF_GUARD],
    [path.join(FENCE_DIR, 'reference-transaction'), REFERENCE_TRANSACTION],
  ] as const) {
    await installScript(path.join(dir, name), script);
  }
  return dir;
}

/** Writes an executable script whole under its name (a git running it meanwhile reads the old one or the new, never half). */
export async function installScript(file: string, script: string): Promise<void> {
  await fs.writeFile(`${file}.new`, script, { mode: 0o755 });
  await fs.rename(`${file}.new`, file);
}
