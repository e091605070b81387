import { BOUNDED_GIT_SETTINGS } from './git-bounds.js';

/**
 * The environment of every git the service starts: through the launcher (git-launcher-host.ts), the
 * wire protocol's own processes (transport.ts), and so the hooks receive-pack runs.
 *
 * - `GIT_NO_REPLACE_OBJECTS`: an object id always means that object. A `refs/replace/<id>` ref tells
 *   git to read another object in its place; honoured on a server, a writer's replace ref could show
 *   a forged commit in place of a real one, or (pointing an object at itself) make every git in the
 *   repository fail with "replace depth too high".
 * - `GIT_TERMINAL_PROMPT=0`: git never waits for a terminal.
 * - The settings receive-pack offers clients (push options, signed pushes, see hooks.ts), set once at
 *   start-up: git reads them as if given with `-c` (`GIT_CONFIG_COUNT`), so the advertisement
 *   (`info/refs`) and the push that follows it offer the same capabilities; and the settings that keep
 *   git within its memory bound (git-bounds.ts).
 */
const FIXED = { GIT_NO_REPLACE_OBJECTS: '1', GIT_TERMINAL_PROMPT: '0' } as const;

/**
 * The service's environment without its secrets (database URLs, the admin token, the secret key):
 * git, the hooks it runs for a client's request and the git launcher have no use for them.
 */
export const environmentWithoutSecrets: Record<string, string> = Object.fromEntries(
  Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && !/^(CAIRN_|DATABASE_URL$|MONGODB_URL$|PG)/.test(entry[0]),
  ),
);

/** As `git -c name=value` for each setting, through the environment (`GIT_CONFIG_COUNT`). */
function settingsEnvironment(settings: Record<string, string>, env: Record<string, string>): Record<string, string> {
  const entries = Object.entries(settings);
  return {
    ...env,
    GIT_CONFIG_COUNT: String(entries.length),
    ...Object.fromEntries(
      entries.flatMap(([name, value], i) => [
        [`GIT_CONFIG_KEY_${i}`, name],
        [`GIT_CONFIG_VALUE_${i}`, value],
      ]),
    ),
  };
}

let configured = settingsEnvironment(BOUNDED_GIT_SETTINGS, {});

export function serverGitEnvironment(): Record<string, string> {
  return { ...configured, ...FIXED };
}

/** Sets the git settings (name → value) and environment variables of every git started from now on, beside the bounds' own. */
export function configureServerGit(settings: Record<string, string>, env: Record<string, string>): void {
  configured = settingsEnvironment({ ...BOUNDED_GIT_SETTINGS, ...settings }, env);
}
