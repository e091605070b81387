import { Migration } from '@mikro-orm/migrations';

/**
 * A value of each repository row that every update of the row replaces with a random one (a
 * trigger, so no writer can forget it): what a repository shows has changed exactly when this has
 * (src/statuses/combined-status.ts keeps answers by it). Random rather than a counter or `xmin`: a
 * commit lost in a crash or a failover hands out its transaction ids and sequence values again,
 * and an old version must never come back for a different row.
 */
export class Migration20261129100000_RepositoryRowVersion extends Migration {
  override name = 'Migration20261129100000_RepositoryRowVersion';

  override up(): void | Promise<void> {
    this.addSql(`alter table "repositories" add column "row_version" uuid not null default gen_random_uuid();`);
    this.addSql(`create function "repositories_new_row_version"() returns trigger language plpgsql as $$
      begin
        new.row_version := gen_random_uuid();
        return new;
      end
    $$;`);
    this.addSql(`create trigger "repositories_row_version" before update on "repositories"
      for each row execute function "repositories_new_row_version"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger "repositories_row_version" on "repositories";`);
    this.addSql(`drop function "repositories_new_row_version"();`);
    this.addSql(`alter table "repositories" drop column "row_version";`);
  }
}
