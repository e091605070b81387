import { Migration } from '@mikro-orm/migrations';

const OLD_BY_NAME = String.raw`^destination refused by policy: (\S+) resolves to .*$`;
const OLD_LITERAL = String.raw`^destination refused by policy: (\S+)$`;
const NEW = String.raw`destination refused by policy: \1 is not allowed by CAIRN_WEBHOOK_ALLOWED_HOSTS`;

/**
 * Delivery records kept from before refusals stopped naming addresses said what a refused name
 * resolved to (`… localhost resolves to 127.0.0.1`), which answered internal DNS for repository
 * admins: rewrite them in today's shape, naming the host alone. Nothing to undo: the addresses are gone.
 */
export class Migration20261125200000_RefusalsWithoutAddresses extends Migration {
  override name = 'Migration20261125200000_RefusalsWithoutAddresses';

  override up(): void | Promise<void> {
    for (const old of [OLD_BY_NAME, OLD_LITERAL]) {
      this.addSql(`update "delivery_attempts" set "error" = regexp_replace("error", '${old}', '${NEW}') where "error" ~ '${old}';`);
      this.addSql(
        `update "webhooks" set "last_response" = jsonb_set("last_response", '{error}', to_jsonb(regexp_replace("last_response"->>'error', '${old}', '${NEW}')))
          where "last_response"->>'error' ~ '${old}';`,
      );
    }
  }

  override down(): void | Promise<void> {}
}
