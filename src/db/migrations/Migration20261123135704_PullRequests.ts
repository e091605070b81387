import { Migration } from '@mikro-orm/migrations';

export class Migration20261123135704_PullRequests extends Migration {
  override name = 'Migration20261123135704_PullRequests';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "pull_requests" ("id" text not null, "repository_id" text not null, "number" int not null, "title" text not null, "body" text null, "state" text not null default 'open', "draft" boolean not null default false, "head_ref" text not null, "head_sha" text not null, "base_ref" text not null, "base_sha" text not null, "user_id" text not null, "merged_at" timestamptz null, "merged_by_id" text null, "merge_commit_sha" text null, "commits_count" int not null default 0, "mergeable" boolean null, "mergeable_base_sha" text null, "mergeable_head_sha" text null, "conflicts" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "closed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "pull_requests_open_by_base" on "pull_requests" ("repository_id", "base_ref") where "state" = 'open';`);
    this.addSql(
      `create unique index "pull_requests_one_open_per_branch_pair" on "pull_requests" ("repository_id", "head_ref", "base_ref") where "state" = 'open';`,
    );
    this.addSql(`create index "pull_requests_repository_id_created_at_id_index" on "pull_requests" ("repository_id", "created_at", "id");`);
    this.addSql(
      `create index "pull_requests_repository_id_state_created_at_id_index" on "pull_requests" ("repository_id", "state", "created_at", "id");`,
    );
    this.addSql(
      `alter table "pull_requests" add constraint "pull_requests_repository_id_number_unique" unique ("repository_id", "number");`,
    );

    this.addSql(
      `create table "pull_request_reviews" ("id" text not null, "pull_request_id" text not null, "state" text not null, "body" text null, "user_id" text not null, "commit_id" text not null, "submitted_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "pull_request_reviews_pull_request_id_submitted_at_id_index" on "pull_request_reviews" ("pull_request_id", "submitted_at", "id");`,
    );

    this.addSql(
      `alter table "pull_requests" add constraint "pull_requests_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "pull_requests" add constraint "pull_requests_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
    this.addSql(
      `alter table "pull_requests" add constraint "pull_requests_merged_by_id_foreign" foreign key ("merged_by_id") references "users" ("id") on delete set null;`,
    );

    this.addSql(
      `alter table "pull_request_reviews" add constraint "pull_request_reviews_pull_request_id_foreign" foreign key ("pull_request_id") references "pull_requests" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "pull_request_reviews" add constraint "pull_request_reviews_user_id_foreign" foreign key ("user_id") references "users" ("id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "pull_request_reviews" drop constraint "pull_request_reviews_pull_request_id_foreign";`);

    this.addSql(`drop table if exists "pull_requests" cascade;`);
    this.addSql(`drop table if exists "pull_request_reviews" cascade;`);
  }
}
