import { Migration } from '@mikro-orm/migrations';

/**
 * The lease of each repository lock held (src/git/refs/repository-lock.ts): which session holds it and
 * until when. A holder renews it while it works; one that stops renewing (a hung or vanished
 * machine) has its session ended by the next process that wants the lock, which so takes it.
 */
export class Migration20261126130000_RepositoryLockLeases extends Migration {
  override name = 'Migration20261126130000_RepositoryLockLeases';

  override up(): void | Promise<void> {
    this.addSql(`create table "repository_lock_leases" (
      "kind" text not null,
      "repository_id" text not null,
      "token" text not null,
      "backend_pid" int not null,
      "expires_at" timestamptz not null,
      constraint "repository_lock_leases_pkey" primary key ("kind", "repository_id")
    );`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "repository_lock_leases";`);
  }
}
