import { Migration } from '@mikro-orm/migrations';

export class Migration20261121234132_Core extends Migration {
  override name = 'Migration20261121234132_Core';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "domain_events" ("id" bigserial primary key, "type" text not null, "action" text null, "repository_id" text null, "owner_id" text null, "actor_id" text null, "payload" jsonb not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "domain_events_repository_id_index" on "domain_events" ("repository_id");`);
    this.addSql(`create index "domain_events_owner_id_index" on "domain_events" ("owner_id");`);

    this.addSql(
      `create table "users" ("id" text not null, "login" text not null, "login_key" text not null, "email" text not null, "admin" boolean not null default false, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_login_key_unique" unique ("login_key");`);

    this.addSql(
      `create table "repositories" ("id" text not null, "name" text not null, "name_key" text not null, "owner_id" text not null, "description" text null, "private" boolean not null default false, "default_branch" text not null default 'main', "empty" boolean not null default true, "created_at" timestamptz not null, "updated_at" timestamptz not null, "pushed_at" timestamptz null, "last_number" int not null default 0, primary key ("id"));`,
    );
    this.addSql(`create index "repositories_created_at_id_index" on "repositories" ("created_at", "id");`);
    this.addSql(`alter table "repositories" add constraint "repositories_owner_id_name_key_unique" unique ("owner_id", "name_key");`);

    this.addSql(
      `create table "issues" ("id" text not null, "repository_id" text not null, "number" int not null, "title" text not null, "body" text null, "state" text not null default 'open', "state_reason" text null, "user_id" text not null, "comments" int not null default 0, "created_at" timestamptz not null, "updated_at" timestamptz not null, "closed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "issues_repository_id_state_created_at_index" on "issues" ("repository_id", "state", "created_at");`);
    this.addSql(`alter table "issues" add constraint "issues_repository_id_number_unique" unique ("repository_id", "number");`);

    this.addSql(
      `create table "collaborators" ("id" text not null, "repository_id" text not null, "user_id" text not null, "permission" text not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "collaborators_user_id_index" on "collaborators" ("user_id");`);
    this.addSql(
      `alter table "collaborators" add constraint "collaborators_repository_id_user_id_unique" unique ("repository_id", "user_id");`,
    );

    this.addSql(
      `create table "access_tokens" ("id" text not null, "user_id" text not null, "name" text not null, "scopes" text[] not null, "token_hash" text not null, "expires_at" timestamptz null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`create index "access_tokens_user_id_index" on "access_tokens" ("user_id");`);
    this.addSql(`alter table "access_tokens" add constraint "access_tokens_token_hash_unique" unique ("token_hash");`);

    this.addSql(
      `alter table "repositories" add constraint "repositories_owner_id_foreign" foreign key ("owner_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "issues" add constraint "issues_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "issues" add constraint "issues_user_id_foreign" foreign key ("user_id") references "users" ("id");`);

    this.addSql(
      `alter table "collaborators" add constraint "collaborators_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "collaborators" add constraint "collaborators_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "access_tokens" add constraint "access_tokens_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "repositories" drop constraint "repositories_owner_id_foreign";`);
    this.addSql(`alter table "issues" drop constraint "issues_user_id_foreign";`);
    this.addSql(`alter table "collaborators" drop constraint "collaborators_user_id_foreign";`);
    this.addSql(`alter table "access_tokens" drop constraint "access_tokens_user_id_foreign";`);
    this.addSql(`alter table "issues" drop constraint "issues_repository_id_foreign";`);
    this.addSql(`alter table "collaborators" drop constraint "collaborators_repository_id_foreign";`);

    this.addSql(`drop table if exists "domain_events" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
    this.addSql(`drop table if exists "repositories" cascade;`);
    this.addSql(`drop table if exists "issues" cascade;`);
    this.addSql(`drop table if exists "collaborators" cascade;`);
    this.addSql(`drop table if exists "access_tokens" cascade;`);
  }
}
