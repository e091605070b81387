import { Migration } from '@mikro-orm/migrations';

/**
 * A repository's open pull requests, kept in its counters row as its open issues are: reading a
 * repository no longer counts its pull requests, and every change of a pull request's state
 * (opened, closed, reopened, merged) moves the count in the same transaction.
 */
export class Migration20261126150000_OpenPullsCounter extends Migration {
  override name = 'Migration20261126150000_OpenPullsCounter';

  override up(): void | Promise<void> {
    this.addSql(`alter table "repository_counters" add column "open_pulls" int not null default 0;`);
    this.addSql(`update "repository_counters" c
                    set "open_pulls" = (select count(*) from "pull_requests" p where p."repository_id" = c."repository_id" and p."state" = 'open');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "repository_counters" drop column "open_pulls";`);
  }
}
