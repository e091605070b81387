import { Migration } from '@mikro-orm/migrations';

/**
 * What a repository's refs storage looked like when its refs were last recorded (a digest of the
 * ref directories' and packed-refs' identities and times, src/git/refs/refs-fingerprint.ts): start-up
 * compares only repositories whose storage changed since, instead of asking git about every one.
 */
export class Migration20261126140000_RefsFingerprint extends Migration {
  override name = 'Migration20261126140000_RefsFingerprint';

  override up(): void | Promise<void> {
    this.addSql(`alter table "repositories" add column "refs_fingerprint" text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "repositories" drop column "refs_fingerprint";`);
  }
}
