import { Migration } from '@mikro-orm/migrations';

/**
 * Comments on issues and pull requests (`issue_comments`, keyed by the repository and the number the
 * two share), read a conversation at a time oldest first; they go with their repository. A pull
 * request counts its comments in a column of its own, as an issue already does (`issues.comments`).
 */
export class Migration20261128100000_IssueComments extends Migration {
  override name = 'Migration20261128100000_IssueComments';

  override up(): void | Promise<void> {
    this.addSql(`create table "issue_comments" (
      "id" text not null primary key,
      "repository_id" text not null references "repositories" ("id") on delete cascade,
      "number" int not null,
      "user_id" text not null references "users" ("id"),
      "body" text not null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    );`);
    this.addSql(
      `create index "issue_comments_repository_id_number_created_at_id_index" on "issue_comments" ("repository_id", "number", "created_at", "id");`,
    );
    this.addSql(`alter table "pull_requests" add column "comments" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "pull_requests" drop column "comments";`);
    this.addSql(`drop table "issue_comments";`);
  }
}
