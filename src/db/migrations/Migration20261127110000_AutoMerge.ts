import { Migration } from '@mikro-orm/migrations';

/** Auto-merge of a pull request: how it will merge and who enabled it (the merger), set while enabled. */
export class Migration20261127110000_AutoMerge extends Migration {
  override name = 'Migration20261127110000_AutoMerge';

  override up(): void | Promise<void> {
    this.addSql(`alter table "pull_requests" add column "auto_merge_method" text null, add column "auto_merge_enabled_by_id" text null;`);
    this.addSql(
      `alter table "pull_requests" add constraint "pull_requests_auto_merge_enabled_by_id_foreign" foreign key ("auto_merge_enabled_by_id") references "users" ("id") on delete set null;`,
    );
    this.addSql(
      `create index "pull_requests_auto_merge" on "pull_requests" ("repository_id") where "state" = 'open' and "auto_merge_method" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "pull_requests" drop column "auto_merge_method", drop column "auto_merge_enabled_by_id";`);
  }
}
