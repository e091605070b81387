import type { Scope } from './scopes.js';

/** Who is calling: the token's user and the token's scopes. */
export interface Principal {
  userId: string;
  login: string;
  email: string;
  admin: boolean;
  tokenId: string;
  scopes: ReadonlySet<Scope>;
}
