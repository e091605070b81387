import type { ActorRef, EventRepository } from './payloads.js';

/**
 * The fields of every recorded event, by type and action, besides the
 * `event`, `action`, `repository` and `sender` that the recorder adds to all
 * of them. Each capability declares its own events from its own folder by
 * augmenting one of these interfaces (`declare module '../events/event-map.js'`),
 * so the events folder depends on no capability and a change that records an
 * event with a wrong action or a missing field does not compile.
 */

/** Events with an `action`: type → action → fields. @public (augmented, never imported by name) */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ActionEvents {}

/** Events without an `action` (push and the ref events): type → fields. @public (augmented, never imported by name) */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface PlainEvents {}

/** What changed in an `updated` event: field → its value before (`{from}`), or a richer description. */
export type Changes = Record<string, unknown>;

/** An event that carries nothing beyond the common parts. */
export type NoFields = Record<never, never>;

interface Common {
  repository: EventRepository;
  actor: ActorRef;
}

type ActionChange = {
  [T in keyof ActionEvents]: {
    [A in keyof ActionEvents[T]]: Common & { type: T; action: A; fields: ActionEvents[T][A] };
  }[keyof ActionEvents[T]];
}[keyof ActionEvents];

type PlainChange = { [T in keyof PlainEvents]: Common & { type: T; action?: undefined; fields: PlainEvents[T] } }[keyof PlainEvents];

/** One change to record: its type, action and fields must match the map. */
export type RecordedChange = ActionChange | PlainChange;

/** Every event type some capability records. */
export type RecordedEventType = keyof ActionEvents | keyof PlainEvents;
