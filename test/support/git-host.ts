import { adminClient, createUser } from './client.js';
import { GitSandbox } from './git.js';
import { CairnServer } from './server.js';

/**
 * The set-up that git-over-HTTP test files share: a server of the file's own, a git sandbox and a
 * user `alice`, made before the file's tests and removed after them. The names are live bindings:
 * a file imports them, calls `gitHost()` at its top, and uses them in its tests.
 */
export let server: CairnServer;
export let git: GitSandbox;
export let alice: Awaited<ReturnType<typeof createUser>>;

export function gitHost(): void {
  beforeAll(async () => {
    [server, git] = await Promise.all([CairnServer.start(), GitSandbox.create()]);
    alice = await createUser(adminClient(server), 'alice');
  });
  afterAll(async () => {
    await Promise.all([server.destroy(), git.cleanup()]);
  });
}
