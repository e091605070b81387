import { Migration } from '@mikro-orm/migrations';

/**
 * Labels of a repository and the labels and assignees of its issues and pull requests (keyed by
 * (repository, number): one number sequence for both), review requests of pull requests, and the
 * indexes the filtered and sorted lists of issues and pull requests read through.
 */
export class Migration20261128120000_LabelsAssignees extends Migration {
  override name = 'Migration20261128120000_LabelsAssignees';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "labels" ("id" text not null, "repository_id" text not null, "name" text not null, "name_key" text not null, "color" text not null, "description" text null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create unique index "labels_repository_id_name_key_unique" on "labels" ("repository_id", "name_key");`);
    this.addSql(
      `alter table "labels" add constraint "labels_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "conversation_labels" ("repository_id" text not null, "number" int not null, "label_id" text not null, "created_at" timestamptz not null, primary key ("repository_id", "number", "label_id"));`,
    );
    // A label's issues: what a filter by label reads, and what deleting the label removes.
    this.addSql(`create index "conversation_labels_label_id_number_index" on "conversation_labels" ("label_id", "number");`);
    this.addSql(
      `alter table "conversation_labels" add constraint "conversation_labels_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "conversation_labels" add constraint "conversation_labels_label_id_foreign" foreign key ("label_id") references "labels" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "conversation_assignees" ("repository_id" text not null, "number" int not null, "user_id" text not null, "created_at" timestamptz not null, primary key ("repository_id", "number", "user_id"));`,
    );
    this.addSql(
      `create index "conversation_assignees_repository_id_user_id_number_index" on "conversation_assignees" ("repository_id", "user_id", "number");`,
    );
    this.addSql(`create index "conversation_assignees_user_id_index" on "conversation_assignees" ("user_id");`);
    this.addSql(
      `alter table "conversation_assignees" add constraint "conversation_assignees_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "conversation_assignees" add constraint "conversation_assignees_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `create table "review_requests" ("pull_request_id" text not null, "user_id" text not null, "created_at" timestamptz not null, primary key ("pull_request_id", "user_id"));`,
    );
    this.addSql(`create index "review_requests_user_id_index" on "review_requests" ("user_id");`);
    this.addSql(
      `alter table "review_requests" add constraint "review_requests_pull_request_id_foreign" foreign key ("pull_request_id") references "pull_requests" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "review_requests" add constraint "review_requests_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    // The lists' filters and orders: by creator, and by last update (with or without a state).
    this.addSql(`create index "issues_repository_id_user_id_created_at_index" on "issues" ("repository_id", "user_id", "created_at");`);
    this.addSql(`create index "issues_repository_id_updated_at_id_index" on "issues" ("repository_id", "updated_at", "id");`);
    this.addSql(
      `create index "issues_repository_id_state_updated_at_id_index" on "issues" ("repository_id", "state", "updated_at", "id");`,
    );
    this.addSql(
      `create index "pull_requests_repository_id_user_id_created_at_index" on "pull_requests" ("repository_id", "user_id", "created_at");`,
    );
    this.addSql(`create index "pull_requests_repository_id_updated_at_id_index" on "pull_requests" ("repository_id", "updated_at", "id");`);
    this.addSql(
      `create index "pull_requests_repository_id_state_updated_at_id_index" on "pull_requests" ("repository_id", "state", "updated_at", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "review_requests" cascade;`);
    this.addSql(`drop table if exists "conversation_assignees" cascade;`);
    this.addSql(`drop table if exists "conversation_labels" cascade;`);
    this.addSql(`drop table if exists "labels" cascade;`);
    for (const index of [
      'issues_repository_id_user_id_created_at_index',
      'issues_repository_id_updated_at_id_index',
      'issues_repository_id_state_updated_at_id_index',
      'pull_requests_repository_id_user_id_created_at_index',
      'pull_requests_repository_id_updated_at_id_index',
      'pull_requests_repository_id_state_updated_at_id_index',
    ]) {
      this.addSql(`drop index if exists "${index}";`);
    }
  }
}
