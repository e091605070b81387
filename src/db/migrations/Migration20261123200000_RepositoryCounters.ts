import { Migration } from '@mikro-orm/migrations';

/**
 * A repository's counters in a row of their own: the number sequence that issues and pull requests
 * share (moved from `repositories.last_number`) and the count of open issues (counted on every read
 * of a repository until now, a cost that grew with its issues). Creating an issue updates this row
 * under its lock; pushes, edits and membership checks that lock the repository row no longer queue
 * behind issue creation, nor it behind them.
 */
export class Migration20261123200000_RepositoryCounters extends Migration {
  override name = 'Migration20261123200000_RepositoryCounters';

  override up(): void | Promise<void> {
    this.addSql(`create table "repository_counters" (
      "repository_id" text not null primary key references "repositories" ("id") on delete cascade,
      "last_number" integer not null default 0,
      "open_issues" integer not null default 0
    );`);
    this.addSql(`insert into "repository_counters" ("repository_id", "last_number", "open_issues")
      select r."id", r."last_number", (select count(*) from "issues" i where i."repository_id" = r."id" and i."state" = 'open')
        from "repositories" r;`);
    this.addSql(`alter table "repositories" drop column "last_number";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "repositories" add column "last_number" int not null default 0;`);
    this.addSql(
      `update "repositories" r set "last_number" = c."last_number" from "repository_counters" c where c."repository_id" = r."id";`,
    );
    this.addSql(`drop table "repository_counters";`);
  }
}
