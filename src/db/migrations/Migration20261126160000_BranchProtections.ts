import { Migration } from '@mikro-orm/migrations';

/**
 * Branch protection rules, one per (repository, branch name or pattern); reviews may now be
 * dismissed; a pull request's mergeability check also stores whether its head contains the base
 * tip (`behind` under strict status checks).
 */
export class Migration20261126160000_BranchProtections extends Migration {
  override name = 'Migration20261126160000_BranchProtections';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "branch_protections" ("id" text not null, "repository_id" text not null, "pattern" text not null, "required_pull_request" boolean not null, "required_approving_review_count" int not null, "dismiss_stale_reviews" boolean not null, "required_status_checks" jsonb null, "enforce_admins" boolean not null, "allow_force_pushes" boolean not null, "allow_deletions" boolean not null, "required_linear_history" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "branch_protections" add constraint "branch_protections_repository_id_pattern_unique" unique ("repository_id", "pattern");`,
    );
    this.addSql(
      `alter table "branch_protections" add constraint "branch_protections_repository_id_foreign" foreign key ("repository_id") references "repositories" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "pull_requests" add column "base_in_head" boolean null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "pull_requests" drop column "base_in_head";`);
    this.addSql(`drop table if exists "branch_protections" cascade;`);
  }
}
