import { Migration } from '@mikro-orm/migrations';

/**
 * The issues list's order (newest first, ties by id) read straight from an index, with or without a
 * state: a deep page walks the index instead of sorting the ties of every row before it.
 */
export class Migration20261128140000_IssueListOrder extends Migration {
  override name = 'Migration20261128140000_IssueListOrder';

  override up(): void | Promise<void> {
    this.addSql(`drop index if exists "issues_repository_id_state_created_at_index";`);
    this.addSql(
      `create index "issues_repository_id_state_created_at_id_index" on "issues" ("repository_id", "state", "created_at", "id");`,
    );
    this.addSql(`create index "issues_repository_id_created_at_id_index" on "issues" ("repository_id", "created_at", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "issues_repository_id_state_created_at_id_index";`);
    this.addSql(`drop index "issues_repository_id_created_at_id_index";`);
    this.addSql(`create index "issues_repository_id_state_created_at_index" on "issues" ("repository_id", "state", "created_at");`);
  }
}
