/** The first message of a GraphQL answer: /graphql refuses in that shape too (`errors[0].message`). */
const messageOf = (body: unknown): string | undefined =>
  (body as { errors?: { message?: unknown }[] } | null)?.errors?.map((error) => error.message).find((m) => typeof m === 'string');

/** One answer of /graphql: its status, its JSON body (or null), and what a refusal of the token says. */
export interface ServiceAnswer {
  ok: boolean;
  status: number;
  body: unknown;
  /** Why the service refused the token (401), as a sentence for the notice beside the Token field; else null. */
  refusal: string | null;
  /** The answer's own message, or its status line when it has none. */
  message: string;
}

/** One POST to this origin's /graphql: every request the page makes goes through here. */
export async function postGraphQL(headers: Headers, payload: unknown, signal?: AbortSignal): Promise<ServiceAnswer> {
  headers.set('content-type', 'application/json');
  headers.set('accept', 'application/json');
  const response = await fetch('/graphql', { method: 'POST', headers, body: JSON.stringify(payload), signal });
  const body: unknown = await response.json().catch(() => null);
  const message = messageOf(body) ?? `${response.status} ${response.statusText}`;
  const refusal = response.status === 401 ? `The service refused this token: ${message}.` : null;
  return { ok: response.ok, status: response.status, body, refusal, message };
}
