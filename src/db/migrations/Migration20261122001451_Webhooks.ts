import { Migration } from '@mikro-orm/migrations';

export class Migration20261122001451_Webhooks extends Migration {
  override name = 'Migration20261122001451_Webhooks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhooks" ("id" text not null, "repository_id" text null, "user_id" text not null, "url" text not null, "events" text[] not null, "active" boolean not null default true, "secret_ciphertext" text not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "last_response" jsonb null, "failing_since" timestamptz null, "disabled_at" timestamptz null, "disabled_reason" text null, primary key ("id"));`,
    );
    this.addSql(`create index "webhooks_repository_id_index" on "webhooks" ("repository_id");`);
    this.addSql(`create index "webhooks_user_id_index" on "webhooks" ("user_id");`);

    this.addSql(
      `create table "deliveries" ("id" uuid not null, "webhook_id" text not null, "event_id" bigint null, "event" text not null, "action" text null, "status" text not null default 'pending', "body" text not null, "attempts_count" int not null default 0, "series_attempts" int not null default 0, "series" int not null default 0, "next_attempt_at" timestamptz null, "claimed_until" timestamptz null, "status_code" int null, "duration_ms" int null, "created_at" timestamptz not null, "completed_at" timestamptz null, "last_request_url" text null, "last_request_headers" jsonb null, "last_response" jsonb null, primary key ("id"));`,
    );
    this.addSql(`create index "deliveries_due_index" on "deliveries" ("webhook_id", "next_attempt_at") where "status" = 'pending';`);
    this.addSql(`create index "deliveries_created_at_index" on "deliveries" ("created_at");`);
    this.addSql(`create index "deliveries_webhook_id_created_at_id_index" on "deliveries" ("webhook_id", "created_at", "id");`);

    this.addSql(
      `create table "delivery_attempts" ("id" bigserial primary key, "delivery_id" uuid not null, "number" int not null, "started_at" timestamptz not null, "duration_ms" int null, "status_code" int null, "error" text null, "trigger" text not null);`,
    );
    this.addSql(`create index "delivery_attempts_delivery_id_index" on "delivery_attempts" ("delivery_id");`);

    this.addSql(
      `alter table "webhooks" add constraint "webhooks_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhooks" add constraint "webhooks_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "deliveries" add constraint "deliveries_webhook_id_foreign" foreign key ("webhook_id") references "webhooks" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "delivery_attempts" add constraint "delivery_attempts_delivery_id_foreign" foreign key ("delivery_id") references "deliveries" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "deliveries" drop constraint "deliveries_webhook_id_foreign";`);
    this.addSql(`alter table "delivery_attempts" drop constraint "delivery_attempts_delivery_id_foreign";`);

    this.addSql(`drop table if exists "webhooks" cascade;`);
    this.addSql(`drop table if exists "deliveries" cascade;`);
    this.addSql(`drop table if exists "delivery_attempts" cascade;`);
  }
}
