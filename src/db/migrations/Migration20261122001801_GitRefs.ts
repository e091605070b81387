import { Migration } from '@mikro-orm/migrations';

export class Migration20261122001801_GitRefs extends Migration {
  override name = 'Migration20261122001801_GitRefs';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "git_push_journal" ("repository_id" text not null, "user_id" text not null, "started_at" timestamptz not null, primary key ("repository_id"));`,
    );

    this.addSql(
      `create table "git_refs" ("repository_id" text not null, "name" text not null, "sha" text not null, primary key ("repository_id", "name"));`,
    );

    this.addSql(
      `alter table "git_push_journal" add constraint "git_push_journal_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "git_refs" add constraint "git_refs_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "git_push_journal" cascade;`);
    this.addSql(`drop table if exists "git_refs" cascade;`);
  }
}
