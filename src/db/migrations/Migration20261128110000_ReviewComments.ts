import { Migration } from '@mikro-orm/migrations';

/**
 * Comments on lines of a pull request's diff: their threads (`review_threads`: the place in the
 * diff, outdated, resolved) and the comments of each (`pull_request_review_comments`, standalone or
 * a review's). Both go with their pull request; a review's comments go with the review.
 */
export class Migration20261128110000_ReviewComments extends Migration {
  override name = 'Migration20261128110000_ReviewComments';

  override up(): void | Promise<void> {
    this.addSql(`create table "review_threads" (
      "id" text not null primary key,
      "repository_id" text not null references "repositories" ("id") on delete cascade,
      "pull_request_id" text not null references "pull_requests" ("id") on delete cascade,
      "path" text not null,
      "side" text not null,
      "line" integer null,
      "start_line" integer null,
      "start_side" text null,
      "commit_id" text not null,
      "original_commit_id" text not null,
      "original_line" integer not null,
      "original_start_line" integer null,
      "diff_hunk" text not null,
      "hunk_digest" text not null,
      "hunk_index" integer not null,
      "hunk_start_index" integer not null,
      "outdated" boolean not null default false,
      "resolved" boolean not null default false,
      "resolved_by_id" text null references "users" ("id") on delete set null,
      "created_at" timestamptz not null
    );`);
    this.addSql(
      `create index "review_threads_pull_request_id_created_at_id_index" on "review_threads" ("pull_request_id", "created_at", "id");`,
    );
    this.addSql(`create table "pull_request_review_comments" (
      "id" text not null primary key,
      "repository_id" text not null references "repositories" ("id") on delete cascade,
      "pull_request_id" text not null references "pull_requests" ("id") on delete cascade,
      "thread_id" text not null references "review_threads" ("id") on delete cascade,
      "review_id" text null references "pull_request_reviews" ("id") on delete cascade,
      "in_reply_to_id" text null,
      "body" text not null,
      "user_id" text not null references "users" ("id"),
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    );`);
    for (const columns of [
      ['pull_request_id', 'created_at', 'id'],
      ['thread_id', 'created_at', 'id'],
      ['review_id', 'created_at', 'id'],
    ]) {
      this.addSql(
        `create index "pull_request_review_comments_${columns.join('_')}_index" on "pull_request_review_comments" (${columns.map((c) => `"${c}"`).join(', ')});`,
      );
    }
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "pull_request_review_comments";`);
    this.addSql(`drop table "review_threads";`);
  }
}
