/**
 * The environment of every git the service starts: through the launcher (git-launcher-host.ts), the
 * wire protocol's own processes (transport.ts), and so the hooks receive-pack runs.
 *
 * - `GIT_NO_REPLACE_OBJECTS`: an object id always means that object. A `refs/replace/<id>` ref tells
 *   git to read another object in its place; honoured on a server, a writer's replace ref could show
 *   a forged commit in place of a real one, or (pointing an object at itself) make every git in the
 *   repository fail with "replace depth too high".
 * - `GIT_TERMINAL_PROMPT=0`: git never waits for a terminal.
 */
const FIXED = { GIT_NO_REPLACE_OBJECTS: '1', GIT_TERMINAL_PROMPT: '0' } as const;

export function serverGitEnvironment(): Record<string, string> {
  return { ...FIXED };
}
