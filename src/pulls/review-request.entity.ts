import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/** A review requested of a user on a pull request, until they review it or the request is removed. */
@Entity({ tableName: 'review_requests' })
export class ReviewRequest {
  @PrimaryKey({ type: 'text' })
  pullRequestId!: string;

  @PrimaryKey({ type: 'text' })
  userId!: string;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();
}
