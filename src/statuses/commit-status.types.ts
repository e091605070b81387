import { Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Actor } from '../auth/user.entity.js';
import type { ActorRef } from '../events/payloads.js';
import { ConnectionType } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import type { CombinedState, LatestStatus, StatusState } from './combined-status.js';

/**
 * GraphQL types of commit statuses: the records are plain objects read with SQL (combined-status.ts,
 * commit-status.service.ts), their fields plain properties (src/graphql/plain-fields.ts).
 */

/** The GraphQL enums as plain objects: their values are the states as stored (`pending`, …), which REST shows. */
const CommitStatusState = { PENDING: 'pending', SUCCESS: 'success', FAILURE: 'failure', ERROR: 'error' } as const;
registerEnumType(CommitStatusState, { name: 'CommitStatusState' });

export const CombinedStatusState = { PENDING: 'pending', SUCCESS: 'success', FAILURE: 'failure' } as const;
registerEnumType(CombinedStatusState, {
  name: 'CombinedStatusState',
  description: 'FAILURE if any context failed or errored, else PENDING if any is pending or there are none, else SUCCESS.',
});

@ObjectType('CommitStatus', {
  description: 'A state a CI system (or anyone with write access) reported for a commit, under a context.',
})
export class CommitStatusRecord implements LatestStatus {
  @Field(() => ID)
  id!: string;

  @Field(() => CommitStatusState)
  state!: StatusState;

  @Field({ description: 'What reported it, such as `ci/build`; `default` when not given.' })
  context!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;

  @Field(() => String, { nullable: true, description: 'Where the details are (http or https).' })
  targetUrl!: string | null;

  @Field(() => Actor)
  creator!: ActorRef;

  @Field()
  createdAt!: Date;

  @Field()
  updatedAt!: Date;
}

/**
 * The repository a combined status belongs to, as a name and nothing to read through: a CI token
 * (`repo:status`) sees statuses of a private repository, never its code, issues or pull requests.
 */
@ObjectType('StatusRepository')
export class StatusRepository {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field()
  fullName!: string;

  @Field(() => Actor)
  owner!: ActorRef;

  @Field()
  private!: boolean;

  @Field()
  defaultBranch!: string;

  static of(repo: Repository): StatusRepository {
    return Object.assign(new StatusRepository(), {
      id: repo.id,
      name: repo.name,
      fullName: repo.fullName,
      owner: { id: repo.owner.id, login: repo.owner.login },
      private: repo.private,
      defaultBranch: repo.defaultBranch,
    });
  }
}

@ObjectType('CombinedStatus', {
  description: 'The latest status of each context of a commit, and the state they combine to.',
})
export class CombinedStatusRecord {
  @Field()
  sha!: string;

  @Field(() => CombinedStatusState)
  state!: CombinedState;

  @Field(() => [CommitStatusRecord], { description: 'The latest status of each context, newest first.' })
  statuses!: CommitStatusRecord[];

  @Field(() => Int, { description: 'How many contexts there are.' })
  totalCount!: number;

  @Field(() => StatusRepository)
  repository!: StatusRepository;
}

export const CommitStatusConnection = ConnectionType(CommitStatusRecord, 'CommitStatusConnection');

@InputType()
export class CreateCommitStatusInput {
  @Field(() => ID)
  repositoryId!: string;

  @Field({ description: 'The full (40 hex digit) sha of a commit of the repository.' })
  sha!: string;

  @Field(() => CommitStatusState)
  state!: StatusState;

  @Field(() => String, { nullable: true, description: 'Default `default`; at most 255 characters.' })
  context?: string | null;

  @Field(() => String, { nullable: true, description: 'At most 140 characters.' })
  description?: string | null;

  @Field(() => String, { nullable: true, description: 'An http or https URL.' })
  targetUrl?: string | null;
}
