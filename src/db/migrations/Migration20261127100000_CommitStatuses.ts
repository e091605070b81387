import { Migration } from '@mikro-orm/migrations';

/**
 * Commit statuses: their history (`commit_statuses`, listed by repository and sha newest first)
 * and, per (repository, sha, context), the latest status and how many the context holds
 * (`commit_status_contexts`): the combined status reads one row per context, and the cap on a
 * context's history is decided on that row's lock. Both go with their repository.
 */
export class Migration20261127100000_CommitStatuses extends Migration {
  override name = 'Migration20261127100000_CommitStatuses';

  override up(): void | Promise<void> {
    this.addSql(`create table "commit_statuses" (
      "id" text not null primary key,
      "repository_id" text not null references "repositories" ("id") on delete cascade,
      "sha" text not null,
      "state" text not null,
      "context" text not null,
      "description" text null,
      "target_url" text null,
      "creator_id" text not null references "users" ("id"),
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    );`);
    this.addSql(
      `create index "commit_statuses_repository_id_sha_created_at_id_index" on "commit_statuses" ("repository_id", "sha", "created_at", "id");`,
    );
    this.addSql(`create table "commit_status_contexts" (
      "repository_id" text not null references "repositories" ("id") on delete cascade,
      "sha" text not null,
      "context" text not null,
      "latest_id" text not null,
      "state" text not null,
      "count" integer not null,
      primary key ("repository_id", "sha", "context")
    );`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "commit_status_contexts";`);
    this.addSql(`drop table "commit_statuses";`);
  }
}
