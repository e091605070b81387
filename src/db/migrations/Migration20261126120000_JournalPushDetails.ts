import { Migration } from '@mikro-orm/migrations';

/**
 * A push's journal entry names the file, in the repository's own directory (shared by every
 * process), where git's pre-receive hook wrote the push's options and certificate before any ref
 * moved: whichever process records a push its process died in gives its events those details.
 */
export class Migration20261126120000_JournalPushDetails extends Migration {
  override name = 'Migration20261126120000_JournalPushDetails';

  override up(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" add column "push_details" text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "git_push_journal" drop column "push_details";`);
  }
}
