import { iso } from '../events/payloads.js';
import type { Webhook } from './webhook.entity.js';

/** A webhook as it appears in a ping's `hook` (the REST facade yields the same shape). */
export function webhookPayload(hook: Webhook) {
  return {
    id: hook.id,
    url: hook.url,
    events: hook.events,
    active: hook.active,
    has_secret: hook.hasSecret,
    content_type: hook.contentType,
    created_at: iso(hook.createdAt),
    updated_at: iso(hook.updatedAt),
    last_response: hook.lastResponse
      ? { status_code: hook.lastResponse.statusCode, error: hook.lastResponse.error, at: hook.lastResponse.at }
      : null,
    failing_since: iso(hook.failingSince),
    disabled_at: iso(hook.disabledAt),
    disabled_reason: hook.disabledReason,
  };
}

const ZEN = [
  'Every event, delivered.',
  'A cairn marks the way for those who follow.',
  'Retry with patience; give up with a record.',
  'Sign what you send.',
  'Small stones, carefully stacked.',
];

export const zen = () => ZEN[Math.floor(Math.random() * ZEN.length)]!;
