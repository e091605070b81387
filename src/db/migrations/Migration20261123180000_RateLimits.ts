import { Migration } from '@mikro-orm/migrations';

/**
 * Rate-limit usage per bucket (a token, or a client address) and window, summed by every process on
 * the database: each adds what it counted since its last write.
 */
export class Migration20261123180000_RateLimits extends Migration {
  override name = 'Migration20261123180000_RateLimits';

  override up(): void | Promise<void> {
    this.addSql(`create table "rate_limit_usage" (
      "bucket" text not null,
      "window_start" timestamptz not null,
      "used" integer not null,
      primary key ("bucket", "window_start")
    );`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "rate_limit_usage";`);
  }
}
