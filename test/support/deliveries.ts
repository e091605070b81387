import { eventually } from './receiver.js';
import { query, type CairnServer } from './server.js';

export interface DeliveryRow {
  id: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts_count: number;
}

/**
 * The deliveries of these webhooks, once none is pending and none is claimed: every attempt that
 * was started has been recorded, and no other will start. Fan-out inserts a webhook's deliveries
 * in the transaction of their event, so once the requests that made the events are answered,
 * every delivery there will be is a row; once they are all settled, a receiver has every request
 * it will ever get for them (a duplicate included) — a count, not a wait for stragglers.
 */
export async function settledDeliveries(server: CairnServer, webhookIds: string[], timeoutMs = 30_000): Promise<DeliveryRow[]> {
  return eventually(
    async () => {
      const rows = await query<DeliveryRow & { claimed: boolean }>(
        server,
        `select id, status, attempts_count, claimed_until is not null as claimed from deliveries where webhook_id = any($1::text[])`,
        [webhookIds],
      );
      return (
        rows.every((row) => row.status !== 'pending' && !row.claimed) &&
        rows.map(({ id, status, attempts_count }) => ({ id, status, attempts_count }))
      );
    },
    timeoutMs,
    `every delivery of webhook ${webhookIds.join(', ')} to be settled (none pending or on the wire)`,
  );
}
