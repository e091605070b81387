/**
 * Who is calling, and what their token allows: the identity every layer
 * speaks of (a request's context, permission checks, git access). The auth
 * capability is what turns a token into a Principal.
 */

/**
 * Token scopes. `admin` implies every other scope and `repo` implies
 * `repo:read` and `repo:status`, so a check names the least scope an
 * operation needs. `repo:status` is for CI: posting and reading commit
 * statuses, and nothing else.
 */
export const SCOPES = ['repo', 'repo:read', 'repo:status', 'admin:repo_hook', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export function grants(held: ReadonlySet<string>, needed: Scope): boolean {
  if (held.has('admin') || held.has(needed)) return true;
  return (needed === 'repo:read' || needed === 'repo:status') && held.has('repo');
}

/** Who is calling: the token's user and the token's scopes. */
export interface Principal {
  userId: string;
  login: string;
  /**
   * The email Cairn writes for this user in commits and payloads: their public commit email, else
   * their no-reply address (src/auth/commit-identity.ts). The account email is not here: it is private.
   */
  gitEmail: string;
  admin: boolean;
  tokenId: string;
  /** When the caller's token stops working (null: never). A token it mints may not outlive it. */
  tokenExpiresAt: Date | null;
  scopes: ReadonlySet<Scope>;
}
