import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Logger } from '../../logger.js';
import { installScript } from '../hooks.js';

/** How long a cached pack is served after it was made. */
const MAX_AGE_MINUTES = 5;
/**
 * A half-made pack, its claim on the budget and a key's lock are swept once this old: only a script
 * killed outright leaves them, and no maker runs this long (pack-objects' CPU time is bounded).
 */
const STALE_MINUTES = 60;

/**
 * The pack cache, in shell: run by `upload-pack` in place of `pack-objects`
 * (`uploadpack.packObjectsHook`), as `cairn-pack-cache DIR BUDGET_KB COMMAND...` where COMMAND is the
 * `pack-objects` command line upload-pack would have run (behind the kernel's bounds).
 *
 * Sixteen CI runners cloning the same commit at once would make sixteen identical packs; with the
 * cache the first clone makes it (into a file, at pack-objects' own speed, while it streams that
 * file to its client as it grows), the others wait for it and send the file, at the cost of reading
 * it. It is keyed by the repository's directory, the command line and what upload-pack asks for
 * (object ids, content-addressed); only whole clones are shared (no `--not` objects: a fetch's haves
 * differ from client to client), for MAX_AGE_MINUTES.
 *
 * - One maker per key (`flock` on its lock file): the clones arriving while it works wait in line,
 *   then send its pack; when it failed or was stopped, the next in line makes one.
 * - The maker is a process group of its own (`setsid`), stopped when its own client leaves (tail
 *   sees the pipe to upload-pack break): a client that asks and hangs up leaves nothing running.
 *   It is stopped only while its claim (`.held`) is there, which it removes as it ends: its pid
 *   cannot have gone to another process yet.
 * - The cache holds at most BUDGET_KB, packs being made counted at the size of their repository's
 *   objects (about what a whole clone's pack comes to at most; their `.held` claims, admitted one
 *   maker at a time), and is not added to unless the disk has more than BUDGET_KB free beyond
 *   that size: otherwise clones make their packs as without it, straight to upload-pack.
 * - What fails in the script itself says nothing to the client (its stderr goes to the client).
 */
const PACK_CACHE = `#!/bin/sh
dir=$1 budget=$2
shift 2
nl='
'
input=$(cat; echo .) || exit 1
input=\${input%.}
direct() { exec 9>&-; printf '%s' "$input" | "$@"; exit; }
case "$input" in *"$nl--not$nl$nl") ;; *) direct "$@" ;; esac
key=$({ printf '%s\\0' "$(pwd)" "$#" "$@"; printf '%s' "$input"; } | sha256sum) || direct "$@"
key=\${key%% *}
pack=$dir/$key.pack
serve() {
  if [ -n "$(find "$pack" -mmin -${MAX_AGE_MINUTES} 2>/dev/null)" ] && { command exec 3<"$pack"; } 2>/dev/null; then
    exec 9>&-
    exec cat <&3
  fi
}
serve
{ command exec 9>>"$dir/$key.lock"; } 2>/dev/null || direct "$@"
flock 9
serve
find "$dir" -maxdepth 1 -type f \\( -name '*.pack' -mmin +${MAX_AGE_MINUTES} -o ! -name admission.lock -mmin +${STALE_MINUTES} \\) -delete 2>/dev/null
tmp=$dir/$key.$$.tmp
{ command exec 8>>"$dir/admission.lock"; } 2>/dev/null || direct "$@"
flock 8
need=$(du -sk objects 2>/dev/null | cut -f1)
need=\${need:-$budget}
used=$(du -sk "$dir" 2>/dev/null | cut -f1)
held=$(cat "$dir"/*.held 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')
free=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ $((\${used:-$budget} + held + need)) -gt "$budget" ] || [ "\${free:-0}" -le $((budget + need)) ] ||
  ! (set -C && : >"$tmp" && echo "$need" >"$tmp.held") 2>/dev/null; then
  rm -f "$tmp" "$tmp.held"
  exec 8>&-
  direct "$@"
fi
exec 8>&-
printf '%s' "$input" | setsid sh -c 'tmp=$1 pack=$2; shift 2; if "$@" >"$tmp"; then ln -f "$tmp" "$pack"; made=0; else rm -f "$tmp"; made=1; fi; rm -f "$tmp.held"; exit $made' maker "$tmp" "$pack" "$@" &
maker=$!
exec 9>&-
tail -c +1 -s 0.05 --pid="$maker" -f "$tmp" 2>/dev/null
sent=$?
rm -f "$tmp"
if [ "$sent" -ne 0 ]; then
  [ -e "$tmp.held" ] && kill -TERM "-$maker" 2>/dev/null
  rm -f "$tmp.held"
  exit 1
fi
wait "$maker"
`;

/** What the script needs besides POSIX sh: util-linux's flock and setsid, coreutils' sha256sum and GNU tail's --pid. */
const TOOLS_CHECK = 'command -v flock && command -v setsid && command -v sha256sum && tail --pid=1 -c 0 /dev/null';

/**
 * Installs the pack cache for this process: the script in `hooksDir`, the packs in `dir` (empty).
 * Returns the command that wraps `pack-objects` (git-bounds.ts), or null when `budgetBytes` is 0
 * (CAIRN_PACK_CACHE=0: no cache) or the tools it needs are missing (said in the log).
 */
export async function installPackCache(dir: string, hooksDir: string, budgetBytes: number, log?: Logger): Promise<string[] | null> {
  if (budgetBytes === 0) return null;
  if (spawnSync('sh', ['-c', TOOLS_CHECK], { stdio: 'ignore' }).status !== 0) {
    log?.warn('the pack cache is off: it needs flock and setsid (util-linux), sha256sum and GNU tail (coreutils)');
    return null;
  }
  const script = path.join(hooksDir, 'cairn-pack-cache');
  await installScript(script, PACK_CACHE);
  return [script, dir, String(Math.floor(budgetBytes / 1024))];
}
