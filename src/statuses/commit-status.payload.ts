import { iso } from '../events/payloads.js';
import type { LatestStatus } from './combined-status.js';

/** A status as the `status` event carries it, with the branches whose tip is its commit (GitHub's fields). */
export function statusPayload(sha: string, status: LatestStatus, branches: string[]) {
  return {
    id: status.id,
    sha,
    state: status.state,
    context: status.context,
    description: status.description,
    target_url: status.targetUrl,
    branches: branches.map((name) => ({ name })),
    created_at: iso(status.createdAt)!,
    updated_at: iso(status.updatedAt)!,
  };
}

declare module '../events/event-map.js' {
  interface PlainEvents {
    /** `status`: a commit status was posted. */
    status: ReturnType<typeof statusPayload>;
  }
}
