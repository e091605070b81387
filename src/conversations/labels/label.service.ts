import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission } from '../../auth/permissions.js';
import { invalid, notFound } from '../../errors/domain-error.js';
import type { Changes } from '../../events/event-map.js';
import type { EventRecorder } from '../../events/event-recorder.js';
import type { ActorRef } from '../../events/payloads.js';
import type { Principal } from '../../principal.js';
import type { Repository } from '../../repositories/repository.entity.js';
import type { Repositories } from '../../repositories/repository.service.js';
import type { ConversationChange, ConversationRecordsByKind } from '../conversation-changes.js';
import { lockConversation } from '../conversation-lock.js';
import { findConversation } from '../conversation-target.js';
import { Label } from './label.entity.js';
import type { ConversationLabelsInput, CreateLabelInput, UpdateLabelInput } from './label.inputs.js';
import { labelPayload } from './label.payload.js';
import { labelsOn } from './label.reads.js';
import { checkLabel, colorOf } from './label-rules.js';

/** GitHub's bounds: labels on one issue; and a bound of ours on a repository's labels (they are listed whole). */
const MAX_LABELS_PER_CONVERSATION = 100;
const MAX_LABELS_PER_REPOSITORY = 1000;

interface LabelDeps {
  events: EventRecorder;
  repositories: Repositories;
  records: ConversationRecordsByKind;
}

/**
 * The labels use cases: a repository's labels (anyone who can read lists them; writers create,
 * edit and delete them, each with its `label` event), and the labels of an issue or pull request
 * (writers add, replace and remove them, with one `labeled` or `unlabeled` event per label that
 * actually came or went).
 */
export class Labels {
  constructor(private readonly deps: LabelDeps) {}

  /** A repository's labels, by name (case-insensitively); `repo` was found readable. */
  list(em: EntityManager, repo: Repository): Promise<Label[]> {
    return em.find(Label, { repositoryId: repo.id }, { orderBy: { nameKey: 'asc' } });
  }

  /** One label of a readable repository, by name (any case); NOT_FOUND otherwise. */
  get(em: EntityManager, repo: Repository, name: string): Promise<Label> {
    return this.named(em, repo, name);
  }

  async create(em: EntityManager, viewer: Principal, input: CreateLabelInput): Promise<Label> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
    checkLabel({ name: input.name, color: input.color, description: input.description }).throwIfAny();
    const name = input.name.trim();
    return this.unique(name, () =>
      this.deps.events.transaction(em, async (tx) => {
        // One creation per repository at a time, so the count below cannot pass the cap twice.
        await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`labels:${repo.id}`]);
        const [{ count }] = (await tx.execute('select count(*)::int as count from labels where repository_id = ?', [repo.id])) as [
          { count: number },
        ];
        if (count >= MAX_LABELS_PER_REPOSITORY) {
          throw invalid('name', 'too_many', `a repository has at most ${MAX_LABELS_PER_REPOSITORY} labels`);
        }
        const label = tx.create(Label, {
          repositoryId: repo.id,
          name,
          nameKey: name.toLowerCase(),
          color: colorOf(input.color)!,
          description: input.description ?? null,
        });
        await tx.flush(); // a name taken meanwhile fails here
        await this.deps.events.record(tx, {
          type: 'label',
          action: 'created',
          repository: repo,
          actor: actorOf(viewer),
          fields: { label: labelPayload(label) },
        });
        return label;
      }),
    );
  }

  /** Renaming, recoloring, describing: `edited` with the fields' values before, when anything changed. */
  async update(em: EntityManager, viewer: Principal, input: UpdateLabelInput): Promise<Label> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
    const problems = checkLabel({
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.newName !== undefined ? { name: input.newName } : {}),
      ...(input.color !== undefined ? { color: input.color } : {}),
      description: input.description,
    });
    if (input.name != null && input.newName != null && input.name.trim() !== input.newName.trim()) {
      problems.add('newName', 'invalid', 'name and new_name name the same field: give one, or both the same');
    }
    problems.throwIfAny();
    const newName = (input.newName ?? input.name)?.trim();
    return this.unique(newName ?? '', () =>
      this.deps.events.transaction(em, async (tx) => {
        const label = await this.named(tx, repo, input.currentName, true);
        const changes: Changes = {};
        if (newName !== undefined && newName !== label.name) {
          changes.name = { from: label.name };
          label.name = newName;
          label.nameKey = newName.toLowerCase();
        }
        const color = input.color != null ? colorOf(input.color)! : undefined;
        if (color !== undefined && color !== label.color) {
          changes.color = { from: label.color };
          label.color = color;
        }
        if (input.description !== undefined && input.description !== label.description) {
          changes.description = { from: label.description };
          label.description = input.description;
        }
        if (Object.keys(changes).length === 0) return label;
        label.updatedAt = new Date();
        await tx.flush();
        await this.deps.events.record(tx, {
          type: 'label',
          action: 'edited',
          repository: repo,
          actor: actorOf(viewer),
          fields: { label: labelPayload(label), changes },
        });
        return label;
      }),
    );
  }

  /** Deleting a label takes it off every issue and pull request that had it (no `unlabeled` for those, as on GitHub). */
  async delete(em: EntityManager, viewer: Principal, repositoryId: string, name: string): Promise<boolean> {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.WRITE, 'repo');
    return this.deps.events.transaction(em, async (tx) => {
      const label = await this.named(tx, repo, name, true);
      await tx.execute('delete from labels where id = ?', [label.id]);
      await this.deps.events.record(tx, {
        type: 'label',
        action: 'deleted',
        repository: repo,
        actor: actorOf(viewer),
        fields: { label: labelPayload(label) },
      });
      return true;
    });
  }

  /** The labels of an issue or pull request of a readable repository, by name. */
  async ofConversation(em: EntityManager, repo: Repository, number: number): Promise<Label[]> {
    const target = await findConversation(em, repo, number);
    return labelsOn(em, target.repository.id, target.number);
  }

  /** Adds labels; those already there change nothing. Answers the labels it has after. */
  add(em: EntityManager, viewer: Principal, input: ConversationLabelsInput): Promise<Label[]> {
    return this.change(em, viewer, input, false);
  }

  /** Makes the labels exactly these. Answers the labels it has after. */
  replace(em: EntityManager, viewer: Principal, input: ConversationLabelsInput): Promise<Label[]> {
    return this.change(em, viewer, input, true);
  }

  /** Takes one label off; NOT_FOUND when the repository has no such label or the issue does not have it. */
  async remove(em: EntityManager, viewer: Principal, repositoryId: string, number: number, name: string): Promise<boolean> {
    const repo = await this.deps.repositories.find(em, viewer, repositoryId, Permission.WRITE, 'repo');
    const target = await findConversation(em, repo, number);
    return this.deps.events.transaction(em, async (tx) => {
      await lockConversation(tx, target);
      const label = await this.named(tx, repo, name);
      const removed = await tx.execute(
        'delete from conversation_labels where repository_id = ? and number = ? and label_id = ? returning 1',
        [repo.id, number, label.id],
      );
      if (removed.length === 0) throw notFound('label');
      await this.deps.records[target.kind].changed(tx, target, actorOf(viewer), [{ action: 'unlabeled', label: labelPayload(label) }]);
      return true;
    });
  }

  private async change(em: EntityManager, viewer: Principal, input: ConversationLabelsInput, replace: boolean): Promise<Label[]> {
    const repo = await this.deps.repositories.find(em, viewer, input.repositoryId, Permission.WRITE, 'repo');
    const target = await findConversation(em, repo, input.number);
    const keys = [...new Set(input.labels.map((name) => name.trim().toLowerCase()))];
    if (keys.length > MAX_LABELS_PER_CONVERSATION) {
      throw invalid('labels', 'too_many', `an issue has at most ${MAX_LABELS_PER_CONVERSATION} labels`);
    }
    return this.deps.events.transaction(em, async (tx) => {
      await lockConversation(tx, target);
      // Read in the transaction: a label deleted before this is unknown (422), as it would be alone.
      const wanted = keys.length
        ? await tx.find(Label, { repositoryId: repo.id, nameKey: { $in: keys } }, { orderBy: { nameKey: 'asc' } })
        : [];
      const unknown = keys.filter((key) => !wanted.some((label) => label.nameKey === key));
      if (unknown.length) {
        throw invalid(
          'labels',
          'invalid',
          `no label named ${unknown.map((key) => JSON.stringify(key.slice(0, 50))).join(', ')} in this repository`,
        );
      }
      const changes: ConversationChange[] = [];
      if (replace) {
        const removed = await tx.execute<Array<{ label_id: string }>>(
          `delete from conversation_labels where repository_id = ? and number = ?
             and label_id not in (select jsonb_array_elements_text(?::jsonb)) returning label_id`,
          [repo.id, target.number, JSON.stringify(wanted.map((label) => label.id))],
        );
        const gone = await tx.find(Label, { id: { $in: removed.map((row) => row.label_id) } }, { orderBy: { nameKey: 'asc' } });
        for (const label of gone) changes.push({ action: 'unlabeled', label: labelPayload(label) });
      }
      // From `labels` itself, each row key-share locked: a label deleted meanwhile is skipped (its
      // deletion committed first) or waits for this transaction, so the foreign key always holds.
      const added = new Set(
        (
          await tx.execute<Array<{ label_id: string }>>(
            `insert into conversation_labels (repository_id, number, label_id, created_at)
             select ?, ?, l.id, now() from labels l
              where l.repository_id = ? and l.id in (select jsonb_array_elements_text(?::jsonb))
              for key share
             on conflict do nothing returning label_id`,
            [repo.id, target.number, repo.id, JSON.stringify(wanted.map((label) => label.id))],
          )
        ).map((row) => row.label_id),
      );
      for (const label of wanted) if (added.has(label.id)) changes.push({ action: 'labeled', label: labelPayload(label) });
      const labels = await labelsOn(tx, repo.id, target.number);
      if (labels.length > MAX_LABELS_PER_CONVERSATION) {
        throw invalid('labels', 'too_many', `an issue has at most ${MAX_LABELS_PER_CONVERSATION} labels`);
      }
      if (changes.length) await this.deps.records[target.kind].changed(tx, target, actorOf(viewer), changes);
      return labels;
    });
  }

  /** The label of `repo` named `name` (any case), locked for the transaction when `lock`; NOT_FOUND otherwise. */
  private async named(em: EntityManager, repo: Repository, name: string, lock = false): Promise<Label> {
    const label = await em.findOne(
      Label,
      { repositoryId: repo.id, nameKey: name.trim().toLowerCase() },
      lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {},
    );
    if (!label) throw notFound('label');
    return label;
  }

  /** A name another label of the repository has (the unique index decides, also under concurrency): 422 `already_exists`. */
  private async unique<T>(name: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        throw invalid('name', 'already_exists', `a label named ${JSON.stringify(name.slice(0, 50))} already exists in this repository`);
      }
      throw error;
    }
  }
}

const actorOf = (viewer: Principal): ActorRef => ({ id: viewer.userId, login: viewer.login });
