import { Migration } from '@mikro-orm/migrations';

/** A user's public commit email: what the commits Cairn writes for them carry instead of their no-reply address. */
export class Migration20261125200100_UserCommitEmail extends Migration {
  override name = 'Migration20261125200100_UserCommitEmail';

  override up(): void | Promise<void> {
    this.addSql(`alter table "users" add "commit_email" text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "users" drop column "commit_email";`);
  }
}
