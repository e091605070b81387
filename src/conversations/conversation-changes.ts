import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActorRef } from '../events/payloads.js';
import type { ConversationTarget } from './conversation-target.js';
import type { ConversationRecord } from './conversation-record.js';
import type { LabelPayload } from './labels/label.payload.js';

/** One change to an issue's or pull request's labels or assignees, as its event names it. */
export type ConversationChange =
  { action: 'labeled' | 'unlabeled'; label: LabelPayload } | { action: 'assigned' | 'unassigned'; assignee: ActorRef };

/**
 * What labels and assignees need of the issue or pull request behind a number, given at start-up
 * by issues and by pulls (conversations come before both): its record, and its events.
 */
export interface ConversationRecords {
  /** The issue or pull request as one record. */
  read(em: EntityManager, target: ConversationTarget): Promise<ConversationRecord>;
  /**
   * Within `tx`, after the change was written: marks the issue or pull request updated and records
   * one event per change (`issues` for an issue, `pull_request` for a pull request), each carrying
   * the record as it is after all of them.
   */
  changed(tx: EntityManager, target: ConversationTarget, actor: ActorRef, changes: ConversationChange[]): Promise<void>;
}

/** The implementation for each kind of conversation. */
export type ConversationRecordsByKind = Record<ConversationTarget['kind'], ConversationRecords>;
