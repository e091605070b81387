import { Migration } from '@mikro-orm/migrations';

/**
 * Values every process of a site shares, generated once by whichever starts first: the webhook
 * secret key (unless CAIRN_SECRET_KEY sets it), a check that the key in use is the site's, the
 * signed-push nonce seed (encrypted with the key).
 */
export class Migration20261126100000_SiteValues extends Migration {
  override name = 'Migration20261126100000_SiteValues';

  override up(): void | Promise<void> {
    this.addSql(`create table "site_values" (
      "name" text not null primary key,
      "value" text not null,
      "created_at" timestamptz not null default now());`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "site_values";`);
  }
}
