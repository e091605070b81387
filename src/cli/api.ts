/** How the CLI reaches the running service: its GraphQL API, with the admin token. */
import fs from 'node:fs';
import path from 'node:path';

/** A clear message on stderr and exit code 1; never a stack trace. */
export function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

export interface Connection {
  url?: string | undefined;
  token?: string | undefined;
  dataDir?: string | undefined;
}

/** --token, then CAIRN_TOKEN, then the data directory's admin-token file. */
function adminToken(options: Connection): string {
  if (options.token) return options.token;
  if (process.env.CAIRN_TOKEN) return process.env.CAIRN_TOKEN;
  const file = path.join(path.resolve(options.dataDir ?? process.env.CAIRN_DATA_DIR ?? './data'), 'admin-token');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return fail(`no token: pass --token, set CAIRN_TOKEN, or run where ${file} exists`);
  }
}

/** Runs one GraphQL operation; any GraphQL error ends the process with its message. */
export async function graphql<T>(options: Connection, query: string, variables: Record<string, unknown>): Promise<T> {
  const base = (options.url ?? process.env.CAIRN_BASE_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(/\/+$/, '');
  let response: Response;
  try {
    response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken(options)}` },
      body: JSON.stringify({ query, variables }),
    });
  } catch {
    return fail(`cannot reach Cairn at ${base}: is it running?`);
  }
  const body = (await response.json().catch(() => ({}))) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length || !body.data) fail(`error: ${body.errors?.map((e) => e.message).join('; ') ?? `HTTP ${response.status}`}`);
  return body.data;
}
