/** The CLI's writes: users, a user's commit email, tokens. The service checks each one; its refusal is printed as it says it. */
import { graphql, type Connection } from './api.js';

export async function createUser(options: Connection, login: string, email: string, admin: boolean): Promise<void> {
  const data = await graphql<{ createUser: { id: string; login: string } }>(
    options,
    'mutation($input: CreateUserInput!) { createUser(input: $input) { id login email admin } }',
    { input: { login, email, admin } },
  );
  console.log(`created user ${data.createUser.login} (${data.createUser.id})`);
}

/** The public email of the commits Cairn makes for the token's own user; null goes back to their no-reply address. */
export async function setCommitEmail(options: Connection, commitEmail: string | null): Promise<void> {
  const data = await graphql<{ updateViewer: { login: string; commitEmail: string | null; noreplyEmail: string } }>(
    options,
    'mutation($input: UpdateViewerInput!) { updateViewer(input: $input) { login commitEmail noreplyEmail } }',
    { input: { commitEmail } },
  );
  const { login, commitEmail: set, noreplyEmail } = data.updateViewer;
  console.log(`commits Cairn makes for ${login} carry ${set ?? `${noreplyEmail} (no-reply)`}`);
}

interface TokenInput {
  login?: string | undefined;
  name: string;
  scopes: string[];
  expiresAt?: string | undefined;
}

/** The token goes alone on the last line, so a script can take it with `tail -n 1`. */
export async function createToken(options: Connection, input: TokenInput): Promise<void> {
  const data = await graphql<{
    createAccessToken: { token: string; accessToken: { id: string; scopes: string[]; expiresAt: string | null } };
  }>(
    options,
    'mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { token accessToken { id name scopes expiresAt } } }',
    { input },
  );
  const { token, accessToken } = data.createAccessToken;
  // The expiry the service set, which may be the calling token's own when --expires-at was not given.
  const expiry = accessToken.expiresAt ? `, expires ${accessToken.expiresAt}` : '';
  console.log(`created token ${accessToken.id} with scopes ${accessToken.scopes.join(', ')}${expiry} (shown once):`);
  console.log(token);
}

export async function revokeToken(options: Connection, id: string): Promise<void> {
  await graphql(options, 'mutation($id: ID!) { revokeAccessToken(id: $id) }', { id });
  console.log(`revoked ${id}`);
}
