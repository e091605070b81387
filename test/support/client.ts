import { checkAgainstOpenApi } from './openapi.js';
import type { CairnServer } from './server.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is, with no JSON encoding (for malformed-input tests). */
  raw?: string | Buffer;
  headers?: Record<string, string | undefined>;
  /** Send no Authorization header. */
  anonymous?: boolean;
}

/** A REST and GraphQL client acting with one token, the way an API user would. */
export class Client {
  constructor(
    readonly server: CairnServer,
    readonly token: string,
  ) {}

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) if (value !== undefined) headers[name] = value;
    if (!options.anonymous && !('authorization' in headers)) headers.authorization = `Bearer ${this.token}`;
    let body: string | Buffer | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${this.server.url}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    // Every REST answer the suite receives must match the OpenAPI document (throws, failing the test).
    checkAgainstOpenApi(method.toUpperCase(), path, response.status, text, parsed);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options);
  post = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('POST', path, { ...options, body });
  patch = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('PATCH', path, { ...options, body });
  put = <T = any>(path: string, body?: unknown, options?: RequestOptions) => this.request<T>('PUT', path, { ...options, body });
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options);

  /** POST /graphql; returns the whole response body ({data, errors}). */
  async graphql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<{ data?: T; errors?: any[]; status: number }> {
    const response = await this.post('/graphql', { query, variables });
    return { ...(response.body ?? {}), status: response.status };
  }

  /** GraphQL that must succeed. */
  async gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const result = await this.graphql<T>(query, variables);
    if (result.errors?.length || !result.data) throw new Error(`GraphQL failed: ${JSON.stringify(result.errors ?? result)}`);
    return result.data;
  }
}

/**
 * The no-reply address Cairn writes for a user who set no public commit email: in the commits it
 * makes and the `pusher` of push events (`<id>+<login>@users.noreply.<host of CAIRN_BASE_URL>`).
 */
export function noreplyEmail(server: CairnServer, user: { userId: string; login: string }): string {
  return `${user.userId}+${user.login}@users.noreply.${new URL(server.url).hostname}`;
}

export function adminClient(server: CairnServer): Client {
  return new Client(server, server.adminToken);
}

/** Creates a user and a token for them through the admin's GraphQL API. */
export async function createUser(
  admin: Client,
  login: string,
  scopes: string[] = ['repo'],
  options: { admin?: boolean; expiresAt?: string } = {},
): Promise<Client & { login: string; userId: string }> {
  const created = await admin.gql<{ createUser: { id: string } }>(
    'mutation($input: CreateUserInput!) { createUser(input: $input) { id } }',
    { input: { login, email: `${login}@example.test`, admin: options.admin ?? false } },
  );
  const token = await createToken(admin, login, scopes, options.expiresAt);
  return Object.assign(new Client(admin.server, token), { login, userId: created.createUser.id });
}

export async function createToken(admin: Client, login: string, scopes: string[], expiresAt?: string): Promise<string> {
  const data = await admin.gql<{ createAccessToken: { token: string } }>(
    'mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { token } }',
    { input: { login, name: `token for ${login}`, scopes, expiresAt } },
  );
  return data.createAccessToken.token;
}
