import { Migration } from '@mikro-orm/migrations';

/**
 * A ref change's journal entry keeps what the change means (a merge names its pull request) and how
 * its push events list commits, until it is recorded.
 */
export class Migration20261123135000_JournalNote extends Migration {
  override name = 'Migration20261123135000_JournalNote';

  override up(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" add column "note" jsonb null, add column "commits_new_to" text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" drop column "note", drop column "commits_new_to";`);
  }
}
