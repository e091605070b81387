import type { RecordedEventType } from './event-map.js';

/** Every webhook event type. `ping` is sent on request only, never recorded as a domain event. */
const EVENT_TYPES = [
  'push',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'branch_create',
  'branch_delete',
  'tag_create',
  'tag_delete',
  'repository',
  'member',
  'issues',
  'issue_comment',
  'label',
  'status',
  'ping',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
/** Compile-time: every type a webhook can subscribe to (but `ping`) is declared in the event map by the capability that records it, and nothing else is. */
type _EveryEventTypeDeclared = Assert<Same<RecordedEventType, Exclude<EventType, 'ping'>>>;
