import { Migration } from '@mikro-orm/migrations';

/**
 * A webhook's due deliveries in the order they are claimed (next_attempt_at, then id): a claim reads
 * the first few entries of the index instead of sorting every pending delivery of the webhook — the
 * deliveries of one push are all due at the same instant, so the old index left their whole backlog
 * to sort at each claim.
 */
export class Migration20261123210000_DeliveryClaimOrder extends Migration {
  override name = 'Migration20261123210000_DeliveryClaimOrder';

  override up(): void | Promise<void> {
    this.addSql(`drop index "deliveries_due_index";`);
    this.addSql(`create index "deliveries_due_index" on "deliveries" ("webhook_id", "next_attempt_at", "id") where "status" = 'pending';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "deliveries_due_index";`);
    this.addSql(`create index "deliveries_due_index" on "deliveries" ("webhook_id", "next_attempt_at") where "status" = 'pending';`);
  }
}
