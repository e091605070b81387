import { Migration } from '@mikro-orm/migrations';

/**
 * A ref change's journal entry counts the attempts to describe it as events that began: one that
 * began and never finished (the process died in it) is not repeated as it was, so no repository's
 * changes can make start-up fail again and again.
 */
export class Migration20261125120000_JournalDescribeAttempts extends Migration {
  override name = 'Migration20261125120000_JournalDescribeAttempts';

  override up(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" add column "describe_attempts" int not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" drop column "describe_attempts";`);
  }
}
