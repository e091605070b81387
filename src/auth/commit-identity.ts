/**
 * How a user appears in what Cairn writes for everyone to read: the commits it
 * makes (merges, squashes, rebases, `auto_init`) and the emails of its event
 * payloads (`pusher`). The account email is private (only its owner and site
 * admins read it), so it never appears there: a user is their login and their
 * public commit email, or, without one, a no-reply address as GitHub gives
 * (`<id>+<login>@users.noreply.<host>`, host of CAIRN_BASE_URL), which is
 * theirs alone and stays the same as long as the login and base URL do.
 */

/** What the identity is made of: the account's id, login and public commit email (null: none set). */
export interface IdentityOwner {
  id: string;
  login: string;
  commitEmail: string | null;
}

/** A name and email as a commit records them. */
export interface CommitSignature {
  name: string;
  email: string;
}

/** The no-reply address of a user on the service at `baseUrl` (CAIRN_BASE_URL). */
export function noreplyEmail(user: { id: string; login: string }, baseUrl: string): string {
  // An IPv6 base URL's hostname is bracketed; the brackets cannot stand in an address's domain.
  const host = new URL(baseUrl).hostname.replace(/^\[(.*)\]$/, '$1');
  return `${user.id}+${user.login}@users.noreply.${host}`;
}

/** The email Cairn writes for a user: their public commit email, else their no-reply address. */
export function commitEmail(user: IdentityOwner, baseUrl: string): string {
  return user.commitEmail ?? noreplyEmail(user, baseUrl);
}

/** The identity of the commits Cairn writes for a user: their login as the name, their commit email. */
export function commitSignature(user: IdentityOwner, baseUrl: string): CommitSignature {
  return { name: user.login, email: commitEmail(user, baseUrl) };
}
